// Tool schemas as zod 4 writes them (z.toJSONSchema, what the TypeScript MCP SDK sends), printed as
// one JSON object {name: parameters}. Run by tests/families/test_library_corpus.py where zod is installed.
const { z } = require("zod");

const tools = {
  z_record: z.object({ labels: z.record(z.string(), z.string()) }),
  z_union: z.object({ id: z.union([z.string(), z.number()]) }),
  z_optional: z.object({ name: z.string(), note: z.string().optional() }),
  z_nullable: z.object({ when: z.string().nullable() }),
  z_enum: z.object({ color: z.enum(["red", "green"]) }),
  z_literal: z.object({ kind: z.literal("fixed") }),
  z_email: z.object({ to: z.email() }),
  z_url: z.object({ link: z.url() }),
  z_uuid: z.object({ id: z.uuid() }),
  z_datetime: z.object({ at: z.iso.datetime() }),
  z_date: z.object({ on: z.iso.date() }),
  z_ipv4: z.object({ host: z.ipv4() }),
  z_lengths: z.object({ code: z.string().min(2).max(8) }),
  z_bounds: z.object({ ratio: z.number().gt(0).lt(1), count: z.number().int().min(0).max(10) }),
  z_array: z.object({ tags: z.array(z.string()).min(1).max(3) }),
  z_tuple: z.object({ pair: z.tuple([z.number(), z.string()]) }),
  z_nested: z.object({ user: z.object({ name: z.string(), age: z.number().int() }) }),
  z_discriminated: z.object({
    shape: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("circle"), r: z.number() }),
      z.object({ kind: z.literal("square"), side: z.number() }),
    ]),
  }),
};

const out = {};
for (const [name, schema] of Object.entries(tools)) out[name] = z.toJSONSchema(schema);
process.stdout.write(JSON.stringify(out));
