/**
 * `npm run control:openapi`: the negative control of the OpenAPI contract tests. It makes one
 * route drift from its description (`GET /api/v1/wallet` answers an extra, undeclared field), rebuilds the app, runs
 * the http test that reads a wallet, and passes only when that test FAILS with the response checker's finding. The
 * route file is restored on every path (the next `npm test` rebuilds the app, since its source changed again).
 *
 * Exit 0: the suite caught the drift. Exit 1: it did not (the contract check is broken), or the patch no longer
 * applies (update this script with the route).
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { projectRoot } from "../lib/stack";

const ROUTE = join(projectRoot, "app", "api", "v1", "wallet", "route.ts");
const ANSWER = "jsonResponse(200, await getWallet(principal.userId))";
const DRIFTED = "jsonResponse(200, { ...(await getWallet(principal.userId)), drift: true })";
/** What the checker says about the extra field (tests/helpers/openapi-contract.ts, Ajv's wording). */
const FINDING = "must NOT have additional properties";

const original = readFileSync(ROUTE, "utf8");
if (!original.includes(ANSWER)) {
  process.stderr.write(`control:openapi: ${ROUTE} no longer contains \`${ANSWER}\`: update this control\n`);
  process.exit(1);
}
let output = "";
let status: number | null = null;
try {
  writeFileSync(ROUTE, original.replace(ANSWER, DRIFTED));
  process.stderr.write("control:openapi: GET /api/v1/wallet now answers an undeclared field; rebuilding and testing\n");
  const run = spawnSync(
    "npm",
    ["test", "--", "--only", "http", "tests/http/topups.test.ts", "-t", "the wallet of a new user"],
    { cwd: projectRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] },
  );
  output = `${run.stdout}${run.stderr}`;
  status = run.status;
} finally {
  writeFileSync(ROUTE, original);
}
const caught = status !== 0 && output.includes(FINDING);
process.stderr.write(
  `${output
    .split("\n")
    .filter((line) => line.includes(FINDING) || /passed|failed/.test(line))
    .slice(-6)
    .join("\n")}\n`,
);
process.stderr.write(
  caught
    ? "control:openapi: PASS: the http suite failed on the undeclared field, as it must\n"
    : `control:openapi: FAIL: the http suite did not catch the drift (exit ${status})\n`,
);
process.exit(caught ? 0 : 1);
