/**
 * Loads the project's `.env` files into `process.env` the way Next.js itself does (`@next/env`, the library
 * `next dev` and `next start` use), so a launcher script validates and passes on exactly the settings its Next.js
 * child will see: `.env.<mode>.local`, `.env.local` (not in test), `.env.<mode>`, `.env`, the first file to set a
 * variable winning, and variables already in the environment winning over every file.
 */
import { loadEnvConfig } from "@next/env";

/**
 * Loads the `.env` files of the project at `root` for `next dev` (`dev` true: the `.development` files) or
 * `next start` (`dev` false: the `.production` files). Prints which files it loaded to stderr. Returns their
 * paths. Throws when a file exists but cannot be read.
 */
export function loadEnvFiles(root: string, dev: boolean): string[] {
  const toStderr = {
    info: (...parts: unknown[]) => process.stderr.write(`${parts.join(" ")}\n`),
    error: (...parts: unknown[]) => process.stderr.write(`${parts.join(" ")}\n`),
  };
  return loadEnvConfig(root, dev, toStderr).loadedEnvFiles.map((file) => file.path);
}
