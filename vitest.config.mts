// Test projects (one runner per file pattern, docs/development.md note 10):
//  - unit: pure functions, no servers.
//  - integration: lib/ against a real PostgreSQL and Redis started by tests/setup/global-setup.ts.
//  - http: the built app, the sandbox bank and real servers over HTTP, started by the same global setup.
// Every project fails a test that logs an unexpected error (tests/setup/error-logs.ts); the integration and http
// projects close the database and Redis clients after each file (tests/setup/close-clients.ts). The `controls` project
// exists only when ERROR_LOG_CONTROL=1: tests/unit/error-log-guard.test.ts runs it to show that guard failing.
import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  resolve: { alias: { "@": root } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["tests/unit/**/*.test.ts"],
          environment: "node",
          setupFiles: ["tests/setup/error-logs.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["tests/integration/**/*.test.ts"],
          environment: "node",
          globalSetup: ["tests/setup/global-setup.ts"],
          setupFiles: ["tests/setup/error-logs.ts", "tests/setup/close-clients.ts"],
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
          setupFiles: ["tests/setup/error-logs.ts", "tests/setup/close-clients.ts", "tests/setup/openapi-fetch.ts"],
          testTimeout: 60_000,
          hookTimeout: 300_000,
        },
      },
      ...(process.env.ERROR_LOG_CONTROL === "1"
        ? [
            {
              extends: true,
              test: {
                name: "controls",
                include: ["tests/controls/**/*.test.ts"],
                environment: "node",
                setupFiles: ["tests/setup/error-logs.ts"],
              },
            },
          ]
        : []),
    ],
  },
});
