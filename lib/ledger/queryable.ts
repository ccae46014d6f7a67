import type { QueryResult, QueryResultRow } from "pg";

/** Anything that runs a parameterised query: the pool (autocommit) or a client inside a transaction. */
export interface Queryable {
  query<R extends QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}
