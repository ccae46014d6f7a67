/**
 * Wires the sandbox bank together (state file, engine, HTTP server) and stops it gracefully.
 * `bank/main.ts` is the process entry; this module lets the same bank run inside another process too.
 */
import { randomInt } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { BankConfig } from "./config";
import { BankEngine } from "./engine";
import { seededRandom } from "./faults";
import { createBankServer } from "./server";
import { BankState } from "./state";

export interface RunningBankService {
  /** The port actually bound (differs from the setting when BANK_PORT=0). */
  port: number;
  /** e.g. `http://127.0.0.1:3001`. */
  url: string;
  /** The seed the fault draws use (logged so a run with rates can be replayed with BANK_FAULT_SEED). */
  faultSeed: number;
  /**
   * Stops gracefully: no new connections; in-flight requests get `shutdownGraceMs` to finish, then their
   * connections are closed; webhook attempts in flight are aborted and stay pending; the state is saved.
   * Safe to call more than once.
   */
  stop(): Promise<void>;
}

/**
 * Loads the state file, starts the engine and listens on `config.host:config.port`.
 *
 * @returns the running service.
 * @throws StateFileError when the state file is unreadable; the listen error (e.g. EADDRINUSE) when the port is taken.
 */
export async function startBankService(config: BankConfig, logger: Logger): Promise<RunningBankService> {
  const state = await BankState.open(config.stateFile);
  // A 32-bit seed: mulberry32's whole state.
  const faultSeed = config.faultSeed ?? randomInt(0, 2 ** 32 - 1);
  const engine = new BankEngine({ config, state, logger, random: seededRandom(faultSeed) });
  const { server, cancelSlowReplies } = createBankServer({ config, state, engine, logger });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  engine.start();
  const port = (server.address() as AddressInfo).port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  logger.info(
    {
      stateFile: state.filePath,
      charges: state.charges.length,
      pendingDeliveries: engine.pendingDeliveryCount(),
      faultSeed,
    },
    "bank state loaded",
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const grace = setTimeout(() => {
        cancelSlowReplies();
        server.closeAllConnections();
      }, config.shutdownGraceMs);
      await closed;
      clearTimeout(grace);
      cancelSlowReplies();
      await engine.stop();
      await state.close();
    })();
    return stopping;
  };

  return { port, url: `http://${host}:${port}`, faultSeed, stop };
}
