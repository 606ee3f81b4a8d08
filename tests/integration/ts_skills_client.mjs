// The TypeScript SDK's SkillsClient (@modelcontextprotocol/client, ext/skills) against a skills server.
//
//   node ts_skills_client.mjs CLIENT_DIR URL ERA [DIRECTORY_URI ...]
//
// CLIENT_DIR is a folder whose node_modules holds the pinned @modelcontextprotocol/client (see
// ensure_ts_client() in conftest.py); ERA is "modern" (pinned to 2026-07-28) or "legacy" (the plain
// 2025-11-25 handshake). The script connects over streamable HTTP and calls every skills method the
// client has: list() (every page), get() and read() (with size, digest and frontmatter checks) of
// every listed skill and every file its entry lists, and readDirectory() of each DIRECTORY_URI. Each
// call is recorded, failures included, so one bad reply does not hide the others; the report is one
// JSON object on stdout. The exit code is 0 once the report is printed, 2 when connecting failed.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [clientDir, url, era, ...directories] = process.argv.slice(2);
if (!clientDir || !url || !["modern", "legacy"].includes(era)) {
  console.error("usage: node ts_skills_client.mjs CLIENT_DIR URL modern|legacy [DIRECTORY_URI ...]");
  process.exit(64);
}

const root = path.resolve(clientDir);
const require = createRequire(path.join(root, "package.json"));
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");
const { SkillsClient } = require("@modelcontextprotocol/client/ext/skills");
const clientVersion = JSON.parse(
  readFileSync(path.join(root, "node_modules", "@modelcontextprotocol", "client", "package.json"), "utf8"),
).version;

const failure = (error) => ({ ok: false, error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` });
const cacheFields = (result) => ({ ttlMs: result.ttlMs ?? null, cacheScope: result.cacheScope ?? null });

const client = new Client(
  { name: "skilldeck-ts-skills-client", version: "1.0.0" },
  { versionNegotiation: { mode: era === "modern" ? { pin: "2026-07-28" } : "legacy" } },
);
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
} catch (error) {
  console.log(JSON.stringify({ connect: failure(error) }));
  process.exit(2);
}

const skills = new SkillsClient(client);
const report = {
  clientVersion,
  protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
  supported: skills.supported,
  directoryRead: skills.directoryRead,
  list: null,
  get: [],
  read: [],
  readDirectory: [],
};

let entries = [];
try {
  const listing = await skills.list();
  entries = listing.skills;
  report.list = {
    ok: true,
    uris: entries.map((s) => s.uri),
    invalid: listing.invalid,
    ...cacheFields(listing),
  };
} catch (error) {
  report.list = failure(error);
}

for (const entry of entries) {
  try {
    const got = await skills.get(entry.uri);
    report.get.push({ uri: entry.uri, ok: true, sameEntry: JSON.stringify(got.skill) === JSON.stringify(entry), ...cacheFields(got) });
  } catch (error) {
    report.get.push({ uri: entry.uri, ...failure(error) });
  }
  const files = entry.resources === "dynamic" ? [{ uri: entry.uri }] : entry.resources;
  for (const file of files) {
    try {
      const read = await skills.read(entry, file.uri);
      report.read.push({
        skill: entry.uri,
        uri: file.uri,
        ok: true,
        verified: read.verified,
        size: read.bytes.byteLength,
        frontmatterChecked: read.frontmatter !== undefined,
      });
    } catch (error) {
      report.read.push({ skill: entry.uri, uri: file.uri, ...failure(error) });
    }
  }
}

for (const uri of directories) {
  try {
    const listing = await skills.readDirectory(uri);
    report.readDirectory.push({
      uri,
      ok: true,
      resources: listing.resources.map((r) => ({ uri: r.uri, name: r.name, mimeType: r.mimeType ?? null })),
      ...cacheFields(listing),
    });
  } catch (error) {
    report.readDirectory.push({ uri, ...failure(error) });
  }
}

console.log(JSON.stringify(report));
await client.close();
