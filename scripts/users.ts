/**
 * `npm run users -- create --email E (--password-stdin | --password P) [--name N] [--admin] [--token]`
 * (contract sections 4 and 9).
 *
 * The password comes, in order of preference, from standard input (`--password-stdin`: everything read, one
 * trailing newline removed), from a hidden prompt asked twice when standard input is a terminal and no
 * password option is given, or from `--password P`, which stays for scripts but is visible to every local user
 * in `ps` and in shell history while the command runs.
 *
 * Creates an account with the same rules as the sign-up page (lib/users/create-user.ts); `--admin` makes it an
 * admin, `--token` also creates a personal API token and prints it alone as the last line of stdout (the only
 * thing this command prints on stdout; everything else goes to stderr).
 *
 * Finds the database through DATABASE_URL or a running demo's `.data/runtime.json` (resolveCliEnvironment).
 * Exit codes: 0 created; 1 the email already has an account (nothing changed); 2 cannot run (no running demo,
 * bad arguments, invalid email or password, database error).
 */
import { parseArgs } from "node:util";
import { read } from "read";
import { z } from "zod";
import { resolveCliEnvironment } from "./lib/runtime-file";
import { exitWithHelpIfAsked } from "./lib/cli-help";
import { emailField, newPasswordField } from "../lib/auth/credential-fields";
import { createUser } from "../lib/users/create-user";
import { createApiTokenOrThrow } from "../lib/api-tokens/create-api-token";
import { closeCliClients } from "./lib/close-cli-clients";

const EXIT_OK = 0;
const EXIT_DUPLICATE_EMAIL = 1;
const EXIT_CANNOT_RUN = 2;

/** Name given to a token made by this command, shown on the settings page. */
const CLI_TOKEN_NAME = "created by npm run users";

const USAGE =
  "usage: npm run users -- create --email E [--password-stdin | --password P] [--name N] [--admin] [--token]\n" +
  "  --password-stdin reads the password from standard input; without a password option, a terminal is asked\n" +
  "  for it; --password P is visible to other local users (ps) while the command runs";

/** Longest standard input read for a password: 128 characters of 4 UTF-8 bytes, plus a newline. */
const PASSWORD_STDIN_MAX_BYTES = 128 * 4 + 2;

const argsSchema = z.object({
  email: emailField,
  password: newPasswordField,
  name: z.string().trim().min(1).max(100).optional(),
  admin: z.boolean().default(false),
  token: z.boolean().default(false),
});

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

const cliOptions = {
  email: { type: "string" },
  password: { type: "string" },
  "password-stdin": { type: "boolean" },
  name: { type: "string" },
  admin: { type: "boolean" },
  token: { type: "boolean" },
} as const;

/** Splits the command line; null (after printing why) when it has unknown options or missing values. */
function readCommandLine(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options: cliOptions });
  } catch (error) {
    log(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return null;
  }
}

/** Standard input up to its end, without one trailing newline; null (after saying why) when too long. */
async function readPasswordFromStdin(): Promise<string | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of process.stdin) {
    const bytes = chunk as Buffer;
    total += bytes.length;
    if (total > PASSWORD_STDIN_MAX_BYTES) {
      log(`--password-stdin: standard input is longer than a password can be (${PASSWORD_STDIN_MAX_BYTES} bytes)`);
      return null;
    }
    chunks.push(bytes);
  }
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

/** Asks a terminal for the password twice, without echo; null (after saying why) without a terminal or on a mismatch. */
async function promptPassword(): Promise<string | null> {
  if (!process.stdin.isTTY) {
    log(`no password: pipe it with --password-stdin (standard input is not a terminal)\n${USAGE}`);
    return null;
  }
  const ask = (prompt: string) => read({ prompt, silent: true, replace: "*", output: process.stderr });
  const first = await ask("Password: ");
  const second = await ask("Repeat password: ");
  if (first !== second) {
    log("the two passwords differ; nothing changed");
    return null;
  }
  return first;
}

const HELP = `${USAGE}

Creates an account with the sign-up page's rules (an email, a password of 10 to 128 characters).
  --admin            make the account an admin
  --token            also create a personal API token and print it alone as the last line of stdout
  --name N           the account's display name (default: the email's local part)

Finds the database through DATABASE_URL or a running demo (.data/runtime.json).
Exit codes: 0 created; 1 the email already has an account (nothing changed); 2 cannot run (no running demo,
bad arguments, invalid email or password, database error).`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  const parsed = readCommandLine(process.argv.slice(2));
  if (!parsed) return EXIT_CANNOT_RUN;
  if (parsed.positionals.length !== 1 || parsed.positionals[0] !== "create") {
    log(USAGE);
    return EXIT_CANNOT_RUN;
  }
  const { "password-stdin": passwordStdin, ...options } = parsed.values;
  if (passwordStdin && options.password !== undefined) {
    log(`give either --password-stdin or --password, not both\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }
  const password = passwordStdin ? await readPasswordFromStdin() : (options.password ?? (await promptPassword()));
  if (password === null) return EXIT_CANNOT_RUN;
  const args = argsSchema.safeParse({ ...options, password });
  if (!args.success) {
    const problems = args.error.issues.map((i) => `  --${i.path.join(".")}: ${i.message}`).join("\n");
    log(`invalid arguments:\n${problems}\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }
  const { email, name, admin, token } = args.data;

  // Exits with 2 and "no running demo" when neither DATABASE_URL nor .data/runtime.json exists.
  resolveCliEnvironment();

  const role = admin ? "admin" : "user";
  const created = await createUser({ email, password, name, role });
  if (created.kind === "duplicate_email") {
    log(`an account with email ${email} already exists; nothing changed`);
    return EXIT_DUPLICATE_EMAIL;
  }
  log(`created ${role} ${email} (id ${created.userId})`);
  if (token) {
    const apiToken = await createApiTokenOrThrow({ userId: created.userId, name: CLI_TOKEN_NAME });
    log(`created API token ${apiToken.prefix}… (id ${apiToken.id}); it is printed once, below`);
    process.stdout.write(`${apiToken.token}\n`);
  }
  return EXIT_OK;
}

main()
  .then(
    (code) => code,
    (error: unknown) => {
      log(`users: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return EXIT_CANNOT_RUN;
    },
  )
  .then(async (code) => {
    await closeCliClients();
    process.exitCode = code;
  });
