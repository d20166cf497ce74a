// @vitest-environment node
// schema.gen.ts must be what openapi-typescript makes of the control
// plane's committed openapi.json (itself checked against the route table
// by internal/controlplane's TestOpenAPIUpToDate), so the UI's types
// cannot drift from the API.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";
import { expect, test } from "vitest";

test("schema.gen.ts is generated from the current openapi.json", async () => {
  const spec = new URL("../../../internal/controlplane/openapi.json", import.meta.url);
  const want = COMMENT_HEADER + astToString(await openapiTS(spec));
  const got = readFileSync(fileURLToPath(new URL("./schema.gen.ts", import.meta.url)), "utf8");
  if (got !== want) {
    throw new Error("web/src/api/schema.gen.ts is out of date with internal/controlplane/openapi.json: run `npm --prefix web run gen:api` and fix what the type check then reports");
  }
  expect(got).toContain('"/v1/jobs/{id}/events"');
});
