/**
 * Identical concurrent reads answered by one query, never by a query older than the caller: the token lookup of a
 * duplicate storm (1000 requests with one token at once) costs two or three SELECTs instead of 1000, and a
 * revocation still applies to every request that starts after it committed (contract section 4).
 */

/**
 * Wraps `read` so that concurrent calls with the same key share a query, under one rule: a call is answered only by
 * a query SENT AFTER the call was made. Joining the query already running would answer a caller from a snapshot
 * that may predate a change it must see (a token revoked just before the request arrived); so while a query for a
 * key runs, new calls for that key wait together for ONE next query, sent when the running one settles (resolved
 * or rejected). At most two queries per key exist at a time (the running one and the queued next one), and memory
 * is one entry per key with a call in flight (removed when its last query settles).
 *
 * A rejected query rejects exactly the calls it was answering; the next query is sent all the same.
 *
 * @param read the query, e.g. one SELECT by key; called with a key only when no query of that key is pending.
 * @returns a function with `read`'s signature. Keys are compared as Map keys (use strings, e.g. a hash).
 */
export function coalesceFreshReads<K, V>(read: (key: K) => Promise<V>): (key: K) => Promise<V> {
  interface Slot {
    /** The query sent last: answers the calls made before it was sent. */
    running: Promise<V>;
    /** The calls made while `running` runs, answered by the query sent once it settles; null when none wait. */
    next: Promise<V> | null;
  }
  const slots = new Map<K, Slot>();

  const send = (key: K, slot: Slot): Promise<V> => {
    // A synchronous throw becomes this query's rejection, like any other failure of it.
    const running = new Promise<V>((resolve) => resolve(read(key)));
    slot.running = running;
    const settled = () => {
      // Calls are waiting: their query is sent by the `next` chain below; the slot stays.
      if (slot.next === null && slots.get(key) === slot) slots.delete(key);
    };
    running.then(settled, settled);
    return running;
  };

  return (key: K): Promise<V> => {
    const slot = slots.get(key);
    if (slot === undefined) {
      const created: Slot = { running: Promise.resolve(undefined as V), next: null };
      slots.set(key, created);
      return send(key, created);
    }
    if (slot.next !== null) return slot.next;
    const sendNext = () => {
      slot.next = null;
      return send(key, slot);
    };
    slot.next = slot.running.then(sendNext, sendNext);
    return slot.next;
  };
}
