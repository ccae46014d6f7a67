/**
 * Next.js calls `register()` once when a server instance starts (`next start`, `next dev`), before it serves a
 * request. Shared file: add steps, keep each one small. The modules are imported only on the Node.js runtime, so
 * the edge bundle of this file stays free of Node APIs.
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { env, refuseUnusableSecrets } = await import("./lib/env");
  // The server refuses to start when a secret is unusable (contract section 9, case C16). next.config.ts checked
  // first, with the phase Next.js passes it; Next.js calls register() only in a server, hence "server" (case C33).
  refuseUnusableSecrets("server");
  // Every throttle keys on the address this resolves; undecodable paths become 400s (cases C22, C24).
  const { installClientAddressHook } = await import("./lib/http/client-address-hook");
  installClientAddressHook(env().TRUSTED_PROXY_HOPS);
  // Mail goes out from every server with MAIL_DELIVERY=smtp (docs/decisions/054-mail-outbox.md).
  const { startMailWorker } = await import("./lib/mail/start-mail-worker");
  startMailWorker();
}
