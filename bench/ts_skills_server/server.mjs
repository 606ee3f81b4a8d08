// The TypeScript MCP SDK v2 skills server, as bench/server_throughput.py runs it (benchmark peer).
//
//   node server.mjs MODULES_DIR PACK HOST PORT
//
// MODULES_DIR is a folder whose node_modules holds this folder's package.json dependencies (installed
// there with `npm ci` by bench/server_throughput.py, outside the repository). PACK is a folder of skill
// folders; it is loaded once with the SDK's own `loadSkills(root)` and attached with `skills.attach(mcp)`
// to every McpServer instance. Plain `node:http` on HOST:PORT, one endpoint `/mcp`, both eras:
//
// - 2026-07-28 (the per-request `_meta` envelope): `createMcpHandler(factory, { legacy: "reject" })`,
//   mounted with `toNodeHandler` from @modelcontextprotocol/node; a fresh McpServer per request.
// - 2025-11-25: the SDK's sessionful wiring, one McpServer and one NodeStreamableHTTPServerTransport
//   per `Mcp-Session-Id`: SSE responses (the transport's default), or one JSON body per request
//   (`enableJsonResponse`) when the environment has TS_SKILLS_JSON_RESPONSE=1.
//
// Requests are routed with the SDK's own `isLegacyRequest`, as its documentation shows for keeping a
// sessionful legacy deployment next to a strict modern endpoint. The body is read and parsed once and
// handed to both legs as `parsedBody`. Skill warnings go to stderr; "listening" is printed when ready.
import { randomUUID } from "node:crypto";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";

const [modulesDir, pack, host, portText] = process.argv.slice(2);
if (!modulesDir || !pack || !host || !portText) {
  console.error("usage: node server.mjs MODULES_DIR PACK HOST PORT");
  process.exit(64);
}
const require = createRequire(path.join(path.resolve(modulesDir), "package.json"));
const { McpServer, createMcpHandler, isLegacyRequest, isInitializeRequest } = require("@modelcontextprotocol/server");
const { loadSkills } = require("@modelcontextprotocol/server/ext/skills/node");
const { NodeStreamableHTTPServerTransport, toNodeHandler } = require("@modelcontextprotocol/node");

const MAX_BODY = 4 * 1024 * 1024; // the SDK's default maxRequestBodySize
const enableJsonResponse = process.env.TS_SKILLS_JSON_RESPONSE === "1";
const skills = await loadSkills(path.resolve(pack));

function newServer() {
  const mcp = new McpServer({ name: "ts-sdk-skills", version: "1.0.0" });
  skills.attach(mcp);
  return mcp;
}

const modern = toNodeHandler(createMcpHandler(newServer, { legacy: "reject" }));
const sessions = new Map(); // Mcp-Session-Id -> NodeStreamableHTTPServerTransport

function reject(res, status, code, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

async function legacy(req, res, body) {
  const sessionId = req.headers["mcp-session-id"];
  let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
  if (transport === undefined) {
    if (sessionId !== undefined) return reject(res, 404, -32001, "Session not found");
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return reject(res, 400, -32000, "Bad Request: no valid session ID provided");
    }
    transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

async function readJson(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY) throw Object.assign(new Error("request body too large"), { status: 413 });
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const server = http.createServer(async (req, res) => {
  try {
    if (req.url !== "/mcp") return reject(res, 404, -32000, "Not found");
    const body = req.method === "POST" ? await readJson(req) : undefined;
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string") headers.set(name, value);
    }
    const request = new Request(`http://${host}:${portText}/mcp`, { method: req.method, headers });
    if (await isLegacyRequest(request, body)) await legacy(req, res, body);
    else await modern(req, res, body);
  } catch (error) {
    if (!res.headersSent) reject(res, error?.status ?? 400, -32700, `${error?.name}: ${error?.message}`);
    else res.end();
  }
});
server.keepAliveTimeout = 60_000;
server.listen(Number(portText), host, () => console.log(`listening on http://${host}:${portText}/mcp`));
