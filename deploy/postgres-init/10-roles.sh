#!/bin/sh
# Run once by the postgres image, on the first start of an empty data directory
# (/docker-entrypoint-initdb.d): a login role per service, each with the least it needs.
#   ONCELY_DB_USER (oncely): owns the database of the same name and nothing else: no
#     superuser, no CREATEDB, no CREATEROLE; no other role may connect to that database.
#   TEMPORAL_DB_USER (temporal): may create databases (Temporal's SQL tool creates and then
#     owns temporal and temporal_visibility); no superuser, no CREATEROLE.
# POSTGRES_USER stays the only superuser, for the operator.
set -eu
oncely=${ONCELY_DB_USER:-oncely}
temporal=${TEMPORAL_DB_USER:-temporal}
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname postgres \
  -v oncely="$oncely" -v oncely_password="$ONCELY_DB_PASSWORD" \
  -v temporal="$temporal" -v temporal_password="$TEMPORAL_DB_PASSWORD" <<'SQL'
CREATE ROLE :"oncely" LOGIN PASSWORD :'oncely_password' NOSUPERUSER NOCREATEDB NOCREATEROLE;
CREATE ROLE :"temporal" LOGIN PASSWORD :'temporal_password' NOSUPERUSER CREATEDB NOCREATEROLE;
CREATE DATABASE :"oncely" OWNER :"oncely";
-- A database is open to every role by default: Oncely's is its own alone. (Temporal's
-- tables are its role's; Oncely's role holds no privilege on them.)
REVOKE CONNECT, TEMPORARY ON DATABASE :"oncely" FROM PUBLIC;
SQL
