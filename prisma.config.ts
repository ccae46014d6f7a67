// Prisma CLI configuration. Only `prisma generate` runs here (from postinstall), and it needs no database,
// so the URL falls back to a placeholder when DATABASE_URL is unset (the embedded default; docs/development.md note
// 16).
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://localhost:5432/unused" },
});
