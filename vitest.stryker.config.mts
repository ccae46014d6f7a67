// The tests StrykerJS runs against mutants of lib/ledger (npm run test:mutation): the unit tests of the pure
// parts and the integration tests that exercise the claim, transitions, payments, refunds, the top-up's admission
// (balance-ceiling), the webhook's one-statement settlement (settle-matching-entry, ledger-dispute-entries), the
// reward's statement (reward-statement), a dispute's note and entries (ledger-dispute-entries), transfers and their
// reversal (transfers-ledger, transfer-reversal), payouts' claim and settlement (payouts) and the error classifier
// on a real PostgreSQL (tests/setup/global-setup.ts starts it). One project, so Stryker sees one test run.
import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  resolve: { alias: { "@": root } },
  test: {
    include: [
      "tests/unit/ledger-pure.test.ts",
      "tests/unit/db-errors.test.ts",
      "tests/integration/ledger-claim.test.ts",
      "tests/integration/ledger-claim-runner.test.ts",
      "tests/integration/ledger-transitions.test.ts",
      "tests/integration/payments.test.ts",
      "tests/integration/negative-controls.test.ts",
      "tests/integration/db-errors.test.ts",
      "tests/integration/replay-cache.test.ts",
      "tests/integration/failover-retry.test.ts",
      "tests/integration/settle-topup.test.ts",
      "tests/integration/ledger-refunds.test.ts",
      "tests/integration/reconciler.test.ts",
      "tests/integration/balance-ceiling.test.ts",
      "tests/integration/settle-matching-entry.test.ts",
      "tests/integration/reward-statement.test.ts",
      "tests/integration/ledger-dispute-entries.test.ts",
      "tests/integration/transfers-ledger.test.ts",
      "tests/integration/transfer-reversal.test.ts",
      "tests/integration/payouts.test.ts",
    ],
    environment: "node",
    globalSetup: ["tests/setup/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
