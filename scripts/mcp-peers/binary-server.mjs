#!/usr/bin/env node
// A small MCP server (stdio) made with the MCP TypeScript SDK, for GEM's tests of binary results: its tools
// answer with a file as base64 in every shape MCP servers use — in structuredContent (declared by the
// outputSchema, undeclared, as a data: URL, in an MCP-shaped object) and as image, audio and resource
// content blocks. Each answer also gives the file's size and SHA-256 (computed here, by Node), so a test can
// check the bytes GEM stored. The file is pseudo-random, from a seed: the same input gives the same bytes.
//
// The SDK is the one scripts/mcp-peers/package.json names (make mcp-peers installs it).
import { createHash } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PDF_SIGNATURE = Buffer.from("%PDF-1.7\n");

// file makes size bytes starting with a signature (so the media type can be sniffed), the rest from an
// xorshift generator seeded by seed.
function file(size, seed, signature) {
  const b = Buffer.alloc(size);
  signature.copy(b, 0, 0, Math.min(signature.length, size));
  let x = (seed >>> 0) || 0x9e3779b9;
  for (let i = signature.length; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    b[i] = x & 0xff;
  }
  return b;
}

const sha256 = (b) => createHash("sha256").update(b).digest("hex");

const sizeInput = {
  type: "object",
  properties: {
    size: { type: "integer", minimum: 1, maximum: 16777216 },
    seed: { type: "integer" },
  },
  required: ["size"],
};

const tools = [
  {
    name: "structured_declared",
    description: "A PNG as base64 in structuredContent, declared by the outputSchema (contentEncoding base64).",
    inputSchema: sizeInput,
    outputSchema: {
      type: "object",
      properties: {
        name: { type: "string" },
        bytes: { type: "integer" },
        sha256: { type: "string" },
        data: { type: "string", contentEncoding: "base64", contentMediaType: "image/png" },
      },
      required: ["name", "bytes", "sha256", "data"],
    },
  },
  {
    name: "structured_undeclared",
    description: "A file as base64 in structuredContent with no outputSchema; also a short base64 cursor and a long hex digest, which are not files.",
    inputSchema: sizeInput,
  },
  {
    name: "structured_data_url",
    description: "A PDF as a data: URL in structuredContent.",
    inputSchema: sizeInput,
  },
  {
    name: "structured_mcp_shaped",
    description: "An MCP image object and a resource with a blob inside structuredContent.",
    inputSchema: sizeInput,
  },
  {
    name: "blocks",
    description: "A PNG as an image content block, a PDF as an embedded resource blob and a WAV as an audio block; the text gives their sizes and SHA-256.",
    inputSchema: sizeInput,
  },
  {
    name: "failing",
    description: "isError, with a PNG as base64 in structuredContent and as an image block.",
    inputSchema: sizeInput,
  },
];

const server = new Server({ name: "gem-binary-test-server", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));

server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments ?? {};
  const size = args.size;
  const seed = args.seed ?? 1;
  const png = file(size, seed, PNG_SIGNATURE);
  const facts = (b) => ({ bytes: b.length, sha256: sha256(b) });
  switch (req.params.name) {
    case "structured_declared": {
      const structuredContent = { name: "photo.png", ...facts(png), data: png.toString("base64") };
      return { structuredContent, content: [{ type: "text", text: JSON.stringify(structuredContent) }] };
    }
    case "structured_undeclared": {
      const bin = file(size, seed, Buffer.alloc(0));
      const structuredContent = {
        ...facts(bin),
        file: { name: "blob.bin", content: bin.toString("base64") },
        cursor: Buffer.from(`page=2;seed=${seed}`).toString("base64"),
        digest_hex: sha256(bin).repeat(1024),
      };
      return { structuredContent, content: [{ type: "text", text: JSON.stringify(structuredContent) }] };
    }
    case "structured_data_url": {
      const pdf = file(size, seed, PDF_SIGNATURE);
      const structuredContent = { ...facts(pdf), url: "data:application/pdf;base64," + pdf.toString("base64") };
      return { structuredContent, content: [{ type: "text", text: "a PDF as a data URL" }] };
    }
    case "structured_mcp_shaped": {
      const pdf = file(size, seed + 1, PDF_SIGNATURE);
      const structuredContent = {
        image: { type: "image", mimeType: "image/png", data: png.toString("base64"), ...facts(png) },
        attachment: { uri: "file:///reports/report.pdf", mimeType: "application/pdf", blob: pdf.toString("base64"), ...facts(pdf) },
      };
      return { structuredContent, content: [{ type: "text", text: "an image and a PDF" }] };
    }
    case "blocks": {
      const pdf = file(size, seed + 1, PDF_SIGNATURE);
      const wav = file(size, seed + 2, Buffer.from("RIFF\0\0\0\0WAVE"));
      return {
        content: [
          { type: "text", text: JSON.stringify({ image: facts(png), resource: facts(pdf), audio: facts(wav) }) },
          { type: "image", mimeType: "image/png", data: png.toString("base64") },
          { type: "resource", resource: { uri: "file:///reports/report.pdf", mimeType: "application/pdf", blob: pdf.toString("base64") } },
          { type: "audio", mimeType: "audio/wav", data: wav.toString("base64") },
        ],
      };
    }
    case "failing":
      return {
        isError: true,
        structuredContent: { screenshot: png.toString("base64"), ...facts(png) },
        content: [
          { type: "text", text: "the page did not render" },
          { type: "image", mimeType: "image/png", data: png.toString("base64") },
        ],
      };
    default:
      throw new Error(`no tool ${req.params.name}`);
  }
});

await server.connect(new StdioServerTransport());
