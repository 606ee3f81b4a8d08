// The npm `mcp-proxy` in front of one MCP server over streamable HTTP (benchmark helper).
//
//   node PROXY_DIR/_mcp_proxy.mjs UPSTREAM_URL HOST PORT
//
// bench/gateway.py installs `mcp-proxy` into PROXY_DIR (outside the repository's tracked files) and
// copies this file there, so its imports resolve to that node_modules as ES modules. The
// `mcp-proxy` command only spawns stdio servers, so this is its command's own wiring
// (dist/bin/mcp-proxy.mjs `proxy()`) with the stdio transport swapped for the TypeScript SDK's
// StreamableHTTPClientTransport: one upstream `Client` connected once (versionNegotiation "auto", as
// `--upstreamProtocol auto`: 2026-07-28 with this upstream), and `startHTTPServer` with a
// `createServer` that wires a new `Server` to that shared client with `proxyServer` (one per
// 2025-11-25 session, one per 2026-07-28 request). Everything else is the command's default
// (stateful sessions, SSE responses, the per-session event store). Prints "listening" when ready.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Server } from "@modelcontextprotocol/server";
import { proxyServer, resolveVersionNegotiation, startHTTPServer } from "mcp-proxy";

const [upstream, host, portText] = process.argv.slice(2);
if (!upstream || !host || !portText) {
  console.error("usage: node _mcp_proxy.mjs UPSTREAM_URL HOST PORT");
  process.exit(64);
}

const client = new Client(
  { name: "mcp-proxy", version: "1.0.0" },
  { capabilities: {}, versionNegotiation: resolveVersionNegotiation("auto") },
);
await client.connect(new StreamableHTTPClientTransport(new URL(upstream)));

const createServer = async () => {
  const serverCapabilities = client.getServerCapabilities();
  const server = new Server(client.getServerVersion(), {
    capabilities: serverCapabilities,
    instructions: client.getInstructions(),
  });
  await proxyServer({ client, server, serverCapabilities });
  return server;
};

const proxy = await startHTTPServer({ createServer, host, port: Number(portText) });
console.log("listening");
const stop = async () => {
  await proxy.close();
  await client.close();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
