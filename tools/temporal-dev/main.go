// Temporal's server for Oncely's embedded default: every service in one process on
// loopback, persisted in one SQLite file, the namespace created on first start, and
// Temporal's web UI beside it. It is built from the same server module (and version) as
// the compose stack runs, so `npm start` and production run the same Temporal.
// Oncely registers its search attributes itself once the server answers
// (src/temporal/search-attributes.ts).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/schema"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const clusterName = "active"

type options struct {
	ip, dbFile, namespace, logLevel, codecEndpoint string
	port, uiPort                                   int
	searchAttributes                               map[string]enumspb.IndexedValueType
}

// searchAttributeFlag reads repeated --search-attribute Name=Type flags.
type searchAttributeFlag map[string]enumspb.IndexedValueType

func (f searchAttributeFlag) String() string {
	return fmt.Sprint(map[string]enumspb.IndexedValueType(f))
}

func (f searchAttributeFlag) Set(v string) error {
	name, kind, ok := strings.Cut(v, "=")
	t, known := enumspb.IndexedValueType_shorthandValue[kind]
	if !ok || name == "" || !known {
		return fmt.Errorf("want Name=Type (Keyword, Int, Text, Double, Bool, Datetime, KeywordList), got %q", v)
	}
	f[name] = enumspb.IndexedValueType(t)
	return nil
}

func main() {
	var o options
	flag.StringVar(&o.ip, "ip", "127.0.0.1", "address the frontend (and the UI) listen on")
	flag.IntVar(&o.port, "port", 7233, "frontend gRPC port")
	flag.IntVar(&o.uiPort, "ui-port", 0, "web UI port (0: no UI)")
	flag.StringVar(&o.codecEndpoint, "ui-codec-endpoint", "", "codec server the UI decodes payloads with")
	flag.StringVar(&o.dbFile, "db-filename", "", "SQLite file holding every run (created with its schema when missing)")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace created on first start")
	flag.StringVar(&o.logLevel, "log-level", "error", "debug, info, warn or error")
	o.searchAttributes = searchAttributeFlag{}
	flag.Var(searchAttributeFlag(o.searchAttributes), "search-attribute", "Name=Type, a search attribute of the namespace created on first start (repeatable)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-dev:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.dbFile == "" {
		return errors.New("--db-filename is required")
	}
	store, err := sqliteStore(o)
	if err != nil {
		return err
	}
	conf, err := serverConfig(o, store)
	if err != nil {
		return err
	}
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: o.logLevel, Format: "json"}))
	server, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// One process's share of memory: 8k cached runs rather than 128k.
			dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8096,
			// The UI lists runs: more than the default 10 visibility requests a second.
			dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		}),
	)
	if err != nil {
		return fmt.Errorf("building the server: %w", err)
	}
	if err := server.Start(); err != nil {
		return fmt.Errorf("starting the server: %w", err)
	}
	var ui *uiserver.Server
	if o.uiPort != 0 {
		ui = uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
			Host:                o.ip,
			Port:                o.uiPort,
			TemporalGRPCAddress: fmt.Sprintf("%s:%d", o.ip, o.port),
			EnableUI:            true,
			Codec:               uiconfig.Codec{Endpoint: o.codecEndpoint},
			CORS:                uiconfig.CORS{CookieInsecure: true},
			HideLogs:            true,
		}))
		go func() {
			if err := ui.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "temporal-dev: the UI stopped:", err)
			}
		}()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	if ui != nil {
		ui.Stop()
	}
	server.Stop()
	return nil
}

// sqliteStore opens (or creates, with its schema) the database file and the namespace in it.
func sqliteStore(o options) (*config.SQL, error) {
	store := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: o.dbFile,
		// WAL and synchronous=normal: much faster writes, at the cost of the last commits
		// on a power loss, which a development server can afford.
		ConnectAttributes: map[string]string{"mode": "rwc", "_journal_mode": "wal", "_synchronous": "normal"},
	}
	if err := os.MkdirAll(filepath.Dir(o.dbFile), 0o755); err != nil {
		return nil, err
	}
	if err := prepareDatabase(store); err != nil {
		return nil, fmt.Errorf("the schema in %s: %w", o.dbFile, err)
	}
	// Search attributes named at creation exist before the first request: no cache to wait for.
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.namespace, false, o.searchAttributes)
	if err != nil {
		return nil, err
	}
	if err := sqliteschema.CreateNamespaces(store, ns); err != nil {
		return nil, fmt.Errorf("creating the namespace %s: %w", o.namespace, err)
	}
	return store, nil
}

// prepareDatabase runs this server version's schema statement by statement, keeping what
// exists: a new file gets the whole schema, and a file an earlier version made gets the
// tables, indexes and seed rows added since (Temporal's SQLite schema has grown only by
// those). Then it forgets the cluster members an earlier run recorded: this process is the
// file's only server, and members of a run that was killed would hold the services'
// rings (and every request: "Not enough hosts") until they time out.
func prepareDatabase(store *config.SQL) error {
	db, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, store, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, file := range []string{"sqlite/v3/temporal/schema.sql", "sqlite/v3/visibility/schema.sql"} {
		text, err := fs.ReadFile(schema.Assets(), file)
		if err != nil {
			return err
		}
		statements, err := persistence.LoadAndSplitQueryFromReaders([]io.Reader{bytes.NewReader(text)})
		if err != nil {
			return err
		}
		for _, statement := range statements {
			if err := db.Exec(statement); err != nil && !existing(err) {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	return db.Exec("DELETE FROM cluster_membership")
}

// existing tells a statement that found its table, index or seed row already there.
func existing(err error) bool {
	return strings.Contains(err.Error(), "already exists") || strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func serverConfig(o options, store *config.SQL) (*config.Config, error) {
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = "127.0.0.1"
	conf.Persistence.DefaultStore = "sqlite"
	conf.Persistence.VisibilityStore = "sqlite"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: store}}
	frontend := fmt.Sprintf("%s:%d", o.ip, o.port)
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	// The frontend on the asked address; history, matching and the internal worker on free
	// loopback ports, all held until every one is chosen so no two are the same.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	freePort := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	for _, name := range temporal.DefaultServices {
		var svc config.Service
		var err error
		if name == "frontend" {
			svc.RPC.GRPCPort, svc.RPC.BindOnIP = o.port, o.ip
		} else if svc.RPC.GRPCPort, err = freePort(); err != nil {
			return nil, err
		} else {
			svc.RPC.BindOnLocalHost = true
		}
		if svc.RPC.MembershipPort, err = freePort(); err != nil {
			return nil, err
		}
		conf.Services[name] = svc
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend
	return &conf, nil
}
