/**
 * The sandbox bank's persistence: a snapshot plus an append-only journal (bank/state.ts). What a save
 * acknowledged comes back after a reopen (as after a crash: nothing is closed first), a line torn by a crash
 * mid-append is cut off, and lines a crash left behind after a snapshot rewrite never roll a record back.
 */
import { appendFile, copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BankState, StateFileError, type ChargeRecord, type DeliveryRecord } from "@/bank/state";

let dir = "";
let path = "";
const opened: BankState[] = [];

/** Opens the state at `path` (as the bank does at start); closed after the test. */
async function openState(): Promise<BankState> {
  const state = await BankState.open(path);
  opened.push(state);
  return state;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "bank-state-test-"));
  path = join(dir, "bank-state.json");
});

afterEach(async () => {
  for (const state of opened.splice(0)) await state.close();
  await rm(dir, { recursive: true, force: true });
});

function charge(index: number): ChargeRecord {
  return {
    id: `ch_${index}`,
    merchantRef: `ref-${index}`,
    amount: 100 + index,
    currency: "USD",
    createdAt: new Date(1_700_000_000_000 + index).toISOString(),
    status: "pending",
    outcome: "succeeded",
    faults: { decline: false, slow: false, lost: false, dup: false, reorder: false, nohook: false },
    settleAtMs: 1_700_000_000_000 + index,
    settled: false,
    staleFailureQueued: false,
  };
}

function delivery(index: number): DeliveryRecord {
  return {
    id: `dlv_${index}`,
    eventId: `evt_${index}`,
    type: "charge.succeeded",
    chargeId: `ch_${index}`,
    merchantRef: `ref-${index}`,
    copy: 1,
    body: `{"id":"evt_${index}"}`,
    status: "pending",
    attempts: [],
    nextAttemptAtMs: 1_700_000_000_000 + index,
    createdAt: new Date(1_700_000_000_000 + index).toISOString(),
  };
}

/** Settles charge `index` and delivers its webhook, as the engine does, recording both changes. */
function settleAndDeliver(state: BankState, index: number): void {
  const record = state.chargesById.get(`ch_${index}`)!;
  record.status = "succeeded";
  record.settled = true;
  state.chargeChanged(record);
  const sent = delivery(index);
  state.addDelivery(sent);
  sent.attempts.push({ attempt: 1, startedAt: sent.createdAt, durationMs: 3, status: 200 });
  sent.status = "delivered";
  sent.finishedAt = sent.createdAt;
  state.deliveryChanged(sent);
}

function plain(state: BankState) {
  return {
    charges: JSON.parse(JSON.stringify(state.charges)),
    cancelledKeys: [...state.cancelledKeys],
    deliveries: JSON.parse(JSON.stringify(state.deliveries)),
  };
}

describe("sandbox bank state: snapshot plus journal", () => {
  it("a reopened state equals the saved one: new charges in order, their updates, cancelled keys, pruned deliveries", async () => {
    const state = await openState();
    for (let index = 0; index < 5; index++) state.addCharge(charge(index));
    state.cancelKey("cancelled-1");
    await state.save();
    for (let index = 0; index < 5; index++) settleAndDeliver(state, index);
    state.pruneFinishedDeliveries(2);
    await state.save();

    const reopened = await openState();
    expect(plain(reopened)).toEqual(plain(state));
    expect(reopened.charges.map((c) => c.id)).toEqual(["ch_0", "ch_1", "ch_2", "ch_3", "ch_4"]);
    expect(reopened.charges.every((c) => c.status === "succeeded" && c.settled)).toBe(true);
    expect(reopened.deliveries.map((d) => d.id)).toEqual(["dlv_3", "dlv_4"]);
    expect(reopened.chargesByRef.get("ref-2")?.id).toBe("ch_2");
    expect(reopened.cancelledKeys.has("cancelled-1")).toBe(true);
  });

  it("pruning keeps every pending delivery however old, and the pending ones are known again after a reopen", async () => {
    const state = await openState();
    for (let index = 0; index < 5; index++) state.addCharge(charge(index));
    state.addDelivery(delivery(99)); // the oldest delivery, still pending (its app keeps failing)
    for (let index = 0; index < 5; index++) settleAndDeliver(state, index);
    state.pruneFinishedDeliveries(2);
    await state.save();
    expect(state.deliveries.map((d) => d.id)).toEqual(["dlv_99", "dlv_3", "dlv_4"]);
    expect([...state.pendingDeliveries].map((d) => d.id)).toEqual(["dlv_99"]);

    const reopened = await openState();
    expect(plain(reopened)).toEqual(plain(state));
    expect([...reopened.pendingDeliveries].map((d) => d.id)).toEqual(["dlv_99"]);
    const pending = reopened.pendingDeliveries.values().next().value as DeliveryRecord;
    pending.status = "delivered";
    reopened.deliveryChanged(pending);
    expect(reopened.pendingDeliveries.size).toBe(0);
    await reopened.save();
    expect((await openState()).pendingDeliveries.size).toBe(0);
  });

  it("a save appends only the changed records: the journal grows by one line for one new charge", async () => {
    const state = await openState();
    for (let index = 0; index < 50; index++) state.addCharge(charge(index));
    await state.save();
    const before = (await readFile(`${path}.journal`, "utf8")).split("\n").length;
    state.addCharge(charge(50));
    await state.save();
    const after = (await readFile(`${path}.journal`, "utf8")).split("\n").length;
    expect(after - before).toBe(1);
  });

  it("a line torn by a crash mid-append is cut off; every complete line is kept and appending goes on", async () => {
    const state = await openState();
    state.addCharge(charge(0));
    await state.save();
    await appendFile(`${path}.journal`, '{"s":2,"c":{"id":"ch_1","merchantRef":"ref-');

    const reopened = await openState();
    expect(reopened.charges.map((c) => c.id)).toEqual(["ch_0"]);
    reopened.addCharge(charge(1));
    await reopened.save();
    const again = await openState();
    expect(again.charges.map((c) => c.id)).toEqual(["ch_0", "ch_1"]);
  });

  it("a damaged line that is not the last one is refused, never skipped", async () => {
    const state = await openState();
    state.addCharge(charge(0));
    await state.save();
    await appendFile(`${path}.journal`, "not json\n");
    state.addCharge(charge(1));
    await state.save();
    await expect(BankState.open(path)).rejects.toBeInstanceOf(StateFileError);
  });

  it("after a snapshot rewrite, journal lines a crash left behind do not roll records back", async () => {
    const state = await openState();
    for (let index = 0; index < 10; index++) state.addCharge(charge(index));
    await state.save();
    // The journal as it was before the rewrite: charges still pending.
    await copyFile(`${path}.journal`, join(dir, "old-journal"));
    for (let index = 0; index < 10; index++) settleAndDeliver(state, index);
    // Enough changes to pass the rewrite threshold (10,000 lines): the snapshot now holds everything.
    for (let index = 10; index < 10_010; index++) state.addCharge(charge(index));
    await state.save();
    const snapshot = JSON.parse(await readFile(path, "utf8")) as { journalSeq: number; charges: unknown[] };
    expect(snapshot.charges).toHaveLength(10_010);
    expect(await readFile(`${path}.journal`, "utf8")).toBe("");

    // Crash between the snapshot's rename and the journal's truncation: the old lines are still there.
    await copyFile(join(dir, "old-journal"), `${path}.journal`);
    const reopened = await openState();
    expect(reopened.charges).toHaveLength(10_010);
    expect(reopened.chargesById.get("ch_3")).toMatchObject({ status: "succeeded", settled: true });
  });

  it("a state file written before the journal existed (no journalSeq) still loads", async () => {
    await writeFile(
      path,
      JSON.stringify({ version: 1, charges: [charge(0)], cancelledKeys: ["gone"], deliveries: [delivery(0)] }),
    );
    const state = await openState();
    expect(state.charges.map((c) => c.id)).toEqual(["ch_0"]);
    expect(state.cancelledKeys.has("gone")).toBe(true);
    expect(state.deliveries.map((d) => d.id)).toEqual(["dlv_0"]);
  });
});
