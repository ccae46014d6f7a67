// Runs `prisma generate` without the network. The Prisma CLI wants a schema engine binary that it would
// download from a host these machines cannot reach; `generate` never runs that engine, so any existing file
// satisfies the check (docs/development.md note 1). `migrate` is not used at all: migrations are plain SQL applied by
// scripts/migrate.ts.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const stubDir = join(tmpdir(), "wallet-prisma-stub");
const stub = join(stubDir, "schema-engine-stub.sh");
if (!existsSync(stub)) {
  mkdirSync(stubDir, { recursive: true });
  writeFileSync(
    stub,
    "#!/bin/sh\necho 'schema engine is not available: migrations are plain SQL (npm run db:migrate)' >&2\nexit 1\n",
  );
  chmodSync(stub, 0o755);
}
const result = spawnSync(process.execPath, ["node_modules/prisma/build/index.js", "generate"], {
  stdio: "inherit",
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: stub,
    CHECKPOINT_DISABLE: "1",
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
  },
});
process.exit(result.status ?? 1);
