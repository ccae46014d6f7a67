import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { usesNamedStatements } from "../db";

/** Anything that runs a parameterised query: the pool (autocommit) or a client inside a transaction. */
export interface Queryable {
  query<R extends QueryResultRow = Record<string, unknown>>(config: QueryConfig): Promise<QueryResult<R>>;
  query<R extends QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/**
 * A named (server-side prepared) statement: PostgreSQL parses and plans it once per connection instead of on
 * every call. On the money path that halves PostgreSQL's CPU per transaction (docs/benchmarks.md: pgbench
 * `-M prepared` against the same SQL). Names are unique per SQL text; the driver prepares each on first use
 * per connection.
 *
 * Behind a transaction pooler (DB_POOLER=transaction, or DB_NAMED_STATEMENTS=off) the statement is sent unnamed
 * instead: the pooler hands each transaction another server connection, where a name prepared elsewhere is
 * missing (26000) or already taken (42P05), docs/development.md note 27. Same text, same values, same result.
 */
export function prepared(name: string, text: string, values: unknown[]): QueryConfig {
  return usesNamedStatements() ? { name, text, values } : { text, values };
}
