// The TypeScript SDK's Client (@modelcontextprotocol/client) against the skilldeck gateway.
//
//   node ts_gateway_client.mjs CLIENT_DIR URL ERA SKILL_ID TOOL ARGUMENTS_JSON
//
// CLIENT_DIR is a folder whose node_modules holds the pinned @modelcontextprotocol/client (see
// ensure_ts_client() in conftest.py); ERA is "modern" (pinned to 2026-07-28) or "legacy" (the plain
// 2025-11-25 handshake). The script lists the tools (the test checks each result's
// structuredContent against the meta-tool's result schema), then calls every meta-tool with callTool:
// find, load SKILL_ID and TOOL, read_skill_file SKILL.md of SKILL_ID, and call TOOL with
// ARGUMENTS_JSON; then lists the tools again. Every call is recorded, failures included; the report
// is one JSON object on stdout. Exit code 0 once the report is printed, 2 when connecting failed.
import { createRequire } from "node:module";
import path from "node:path";

const [clientDir, url, era, skillId, tool, argumentsJson] = process.argv.slice(2);
if (!clientDir || !url || !["modern", "legacy"].includes(era) || !skillId || !tool) {
  console.error("usage: node ts_gateway_client.mjs CLIENT_DIR URL modern|legacy SKILL_ID TOOL ARGUMENTS_JSON");
  process.exit(64);
}

const require = createRequire(path.join(path.resolve(clientDir), "package.json"));
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

const failure = (error) => ({ ok: false, error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` });
const client = new Client(
  { name: "skilldeck-ts-gateway-client", version: "1.0.0" },
  { versionNegotiation: { mode: era === "modern" ? { pin: "2026-07-28" } : "legacy" } },
);
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
} catch (error) {
  console.log(JSON.stringify({ connect: failure(error) }));
  process.exit(2);
}

// on 2026-07-28 a conversation id keeps this run's activations apart from other anonymous callers
const _meta = { "dev.skilldeck/conversation": `ts-${era}-${process.pid}` };
const report = { protocolVersion: client.getNegotiatedProtocolVersion() ?? null, calls: {} };
const listNames = async () => (await client.listTools()).tools.map((t) => t.name);

try {
  report.toolsBefore = await listNames();
} catch (error) {
  report.toolsBefore = failure(error);
}
const calls = [
  ["find", { query: "fill in a PDF form" }],
  ["load", { ids: [skillId, tool] }],
  ["read_skill_file", { skill: skillId, path: "SKILL.md" }],
  ["call", { tool, arguments: JSON.parse(argumentsJson ?? "{}") }],
];
for (const [name, args] of calls) {
  try {
    const result = await client.callTool({ name, arguments: args, _meta });
    report.calls[name] = {
      ok: true,
      isError: result.isError ?? false,
      structuredContent: result.structuredContent ?? null,
      text: (result.content ?? []).map((c) => c.text ?? "").join("\n").slice(0, 2000),
    };
  } catch (error) {
    report.calls[name] = failure(error);
  }
}
try {
  report.toolsAfter = await listNames();
} catch (error) {
  report.toolsAfter = failure(error);
}
console.log(JSON.stringify(report));
await client.close();
