import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configJsonSchema, configJsonSchemaText } from '../../src/config/json-schema.js';
import { configFields, configReferenceMarkdown } from '../../src/config/reference.js';
import { configSchema } from '../../src/config/schema.js';

const shipped = new URL('../../config/leadgate.schema.json', import.meta.url);

describe('the config JSON Schema', () => {
  it('is the one generated from the loader schema (run `npm run schema` after changing it)', () => {
    expect(readFileSync(shipped, 'utf8')).toBe(configJsonSchemaText());
  });

  it('knows every field the loader knows, and requires what the loader requires', () => {
    const schema = configJsonSchema() as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(configSchema.shape).sort());
    expect(schema.required.sort()).toEqual(['keys', 'listen', 'upstream']);
    const key = (schema.properties.keys as { items: { properties: Record<string, unknown> } }).items;
    expect(Object.keys(key.properties)).toContain('signing_secret_file');
  });

  it('is named by the example config, so editors validate as you type', () => {
    const example = readFileSync(new URL('../../config/gateway.yaml', import.meta.url), 'utf8');
    expect(example.split('\n')[0]).toBe('# yaml-language-server: $schema=./leadgate.schema.json');
  });

  it('docs/reference/config.md is the reference generated from it, and every field has a meaning', () => {
    expect(readFileSync(new URL('../../docs/reference/config.md', import.meta.url), 'utf8')).toBe(
      configReferenceMarkdown(),
    );
    const missing = configFields().filter((f) => f.meaning === '');
    expect(missing.map((f) => f.path)).toEqual([]);
    expect(configFields().length).toBeGreaterThan(40);
  });
});
