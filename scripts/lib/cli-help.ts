/**
 * `--help` (or `-h`) on every command of this project (`npm run <command> -- --help`): the command prints what it
 * does, its options and its exit codes on stdout and exits 0, before it reads a setting, takes a lock, opens a port
 * or connects to anything. Arguments after a literal `--` are the command's own operands and are not looked at.
 */

/** True when the command line asks for help: `--help` or `-h` before any `--`. */
function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === "--help" || arg === "-h");
}

/**
 * Prints `help` (trimmed, one trailing newline) on stdout and exits 0 when `argv` (default: this process's
 * arguments) asks for help; returns otherwise. Call it first thing in a command's entry point.
 */
export function exitWithHelpIfAsked(help: string, argv: readonly string[] = process.argv.slice(2)): void {
  if (!asksForHelp(argv)) return;
  process.stdout.write(`${help.trim()}\n`);
  process.exit(0);
}
