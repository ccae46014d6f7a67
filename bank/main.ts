/**
 * Entry point of the sandbox bank (`npm run bank`): a separate HTTP service that behaves like a payment provider
 * (contract section 5; docs/bank-sandbox.md). Logs JSON lines to stdout; once it accepts requests it logs
 * `{"msg":"bank listening","port":...,"url":...}`, which is the readiness signal scripts and tests wait for.
 *
 * Exit codes: 0 after a graceful stop (SIGTERM/SIGINT), 1 on a start-up or runtime failure, 2 on invalid settings.
 */
import pino from "pino";
import { BankConfigError, parseBankConfig } from "./config";
import { startBankService } from "./service";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";

const HELP = `usage: npm run bank

The sandbox bank (docs/bank-sandbox.md): an HTTP service that behaves like a payment provider, with its charges,
signed webhooks and test switches in the merchant reference. Settings come from the environment: BANK_PORT,
BANK_HOST, APP_URL (where webhooks go), BANK_WEBHOOK_SECRETS (required, at least 32 bytes), BANK_STATE_FILE and
the BANK_FAULT_* rates (docs/bank-sandbox.md). Logs JSON lines on stdout; "bank listening" says it is ready.
Exit codes: 0 after SIGTERM/SIGINT; 1 a start-up or runtime failure; 2 invalid settings.`;

async function main(): Promise<void> {
  exitWithHelpIfAsked(HELP);
  let config;
  try {
    config = parseBankConfig();
  } catch (error) {
    if (error instanceof BankConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // Synchronous stdout: the readiness line and the last lines before an exit are never lost in a buffer.
  const logger = pino({ level: config.logLevel, base: { service: "bank" } }, pino.destination({ dest: 1, sync: true }));
  process.on("uncaughtException", (error) => {
    logger.fatal({ err: error }, "uncaught exception");
    process.exit(1);
  });
  process.on("unhandledRejection", (error) => {
    logger.fatal({ err: error }, "unhandled rejection");
    process.exit(1);
  });

  const service = await startBankService(config, logger).catch((error: unknown) => {
    logger.fatal({ err: error }, "bank did not start");
    process.exit(1);
  });
  logger.info({ port: service.port, url: service.url, webhookUrl: config.webhookUrl }, "bank listening");

  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      // A second signal means "now": skip the grace period.
      logger.warn({ signal }, "second signal: exiting at once");
      process.exit(1);
    }
    signalled = true;
    logger.info({ signal }, "stopping");
    service.stop().then(
      () => {
        logger.info("bank stopped");
        process.exit(0);
      },
      (error: unknown) => {
        logger.fatal({ err: error }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

void main();
