// The official MCP TypeScript SDK client, driven one step at a time by
// tests/server/test_strict_client.py: a JSON step per line on stdin, a JSON outcome per line
// on stdout. The test decides what to ask and what an answer must be; this only asks, as a
// strict client does, and reports what the SDK made of each answer.
//
//   node drive.mjs MODULES -- SERVER_COMMAND ARGS...
//
// MODULES is the folder holding node_modules/@modelcontextprotocol/sdk (installed by `npm ci`
// from package-lock.json, see .ci/run). Steps:
//   {"op": "list"}                                   every page of tools, prompts, resources, templates
//   {"op": "call", "name": ..., "arguments": {...}}  tools/call (results checked against output schemas)
//   {"op": "check", "name": ..., "arguments": {...}} the arguments against the tool's input schema (Ajv)
//   {"op": "read", "uri": ...}                       resources/read
//   {"op": "prompt", "name": ..., "arguments": {...}} prompts/get
// Each outcome: {"result"} (what the SDK returned), or {"error": {code, message, data}} with
// "answered": the raw JSON-RPC message the server sent for it, so a client-side rejection
// (an SDK validation error) tells itself apart from the server's own error.

import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, dashes, command, ...args] = process.argv.slice(2);
if (!modules || dashes !== '--' || !command) {
    process.stderr.write('usage: node drive.mjs MODULES -- SERVER_COMMAND ARGS...\n');
    process.exit(2);
}
const sdk = (path) => import(pathToFileURL(join(modules, 'node_modules/@modelcontextprotocol/sdk/dist/esm', path)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { AjvJsonSchemaValidator } = await sdk('validation/ajv-provider.js');

const deviations = [];  // whatever the SDK could not make sense of outside a request
const answers = new Map();  // request id -> the raw message the server answered with
const client = new Client({ name: 'strict-client', version: '1.0.0' }, { enforceStrictCapabilities: true });
client.onerror = (error) => deviations.push(String(error?.stack ?? error));
const transport = new StdioClientTransport({ command, args, stderr: 'inherit', env: process.env });
transport.onmessage = (message) => {  // the SDK calls a handler it finds here before its own
    if ('id' in message && ('result' in message || 'error' in message)) answers.set(message.id, message);
};
await client.connect(transport);
const protocolVersion = [...answers.values()][0]?.result?.protocolVersion ?? null;  // the initialize answer
const lastId = () => Math.max(-1, ...answers.keys());

const inputs = new Map();  // tool name -> its input schema, as listed
const validator = new AjvJsonSchemaValidator();

async function every(method, key, params = {}) {
    const items = [];
    let cursor;
    do {
        const page = await client[method]({ ...params, ...(cursor ? { cursor } : {}) });
        items.push(...page[key]);
        cursor = page.nextCursor;
    } while (cursor);
    return items;
}

async function run(step) {
    switch (step.op) {
    case 'list': {
        const capabilities = client.getServerCapabilities() ?? {};
        const tools = await every('listTools', 'tools');
        for (const tool of tools) inputs.set(tool.name, tool.inputSchema);
        return {
            protocolVersion,
            capabilities,
            tools,
            prompts: capabilities.prompts ? await every('listPrompts', 'prompts') : null,
            resources: capabilities.resources ? await every('listResources', 'resources') : null,
            resourceTemplates: capabilities.resources ? await every('listResourceTemplates', 'resourceTemplates') : null,
        };
    }
    case 'check': {
        const check = validator.getValidator(inputs.get(step.name));
        const verdict = check(step.arguments);
        return { valid: verdict.valid, message: verdict.errorMessage ?? null };
    }
    case 'call':
        return await client.callTool({ name: step.name, arguments: step.arguments });
    case 'read':
        return await client.readResource({ uri: step.uri });
    case 'prompt':
        return await client.getPrompt({ name: step.name, arguments: step.arguments ?? {} });
    default:
        throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
    if (!line.trim()) continue;
    const before = lastId();
    let outcome;
    try {
        outcome = { result: await run(JSON.parse(line)) };
    } catch (error) {
        const after = lastId();
        outcome = {
            error: { code: error?.code ?? null, message: String(error?.message ?? error), data: error?.data ?? null },
            answered: after > before ? answers.get(after) : null,
        };
    }
    outcome.deviations = deviations.splice(0);
    process.stdout.write(JSON.stringify(outcome) + '\n');
}
await client.close();
