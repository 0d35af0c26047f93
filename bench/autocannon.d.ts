// Minimal types for the parts of autocannon the benchmarks use.
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      connections?: number;
      duration?: number;
      amount?: number;
      idReplacement?: boolean;
    }
    interface Instance extends PromiseLike<unknown> {
      on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void;
    }
  }
  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
