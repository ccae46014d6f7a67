/**
 * Next.js calls `register()` once when a server instance starts (`next start`, `next dev`), before it serves a
 * request. The Node.js server refuses to start here when a secret is unusable (lib/env.ts
 * `refuseUnusableSecrets`, contract section 9, case C16). The module is imported only on the Node.js runtime, so
 * the edge bundle of this file stays free of Node APIs.
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { refuseUnusableSecrets } = await import("./lib/env");
    refuseUnusableSecrets();
  }
}
