// A small stdio MCP server for the end-to-end tests, built on the official TypeScript SDK:
// its tool list grows while it runs. Calling `add_tool` registers `added_tool`, and the SDK
// tells the client with a `notifications/tools/list_changed` notification.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer(
  { name: "growing-tools", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);

server.registerTool(
  "add_tool",
  { description: "Adds the tool added_tool to this server." },
  async () => {
    server.registerTool(
      "added_tool",
      { description: "A tool that arrived after the session started." },
      async () => ({ content: [{ type: "text", text: "the late tool ran" }] }),
    );
    return { content: [{ type: "text", text: "added_tool is now available" }] };
  },
);

await server.connect(new StdioServerTransport());
