// Test projects (one runner per file pattern, docs/development.md note 10):
//  - unit: pure functions, no servers.
//  - integration: lib/ against a real PostgreSQL and Redis started by tests/setup/global-setup.ts.
//  - http: the built app, the sandbox bank and real servers over HTTP, started by the same global setup.
import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  resolve: { alias: { "@": root } },
  test: {
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["tests/unit/**/*.test.ts"], environment: "node" },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["tests/integration/**/*.test.ts"],
          environment: "node",
          globalSetup: ["tests/setup/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: "http",
          include: ["tests/http/**/*.test.ts"],
          environment: "node",
          globalSetup: ["tests/setup/global-setup.ts"],
          // Every /api/v1 response a test receives is checked against the served OpenAPI document.
          setupFiles: ["tests/setup/openapi-fetch.ts"],
          testTimeout: 60_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
