import { toJSONSchema } from 'zod';
import { configSchema } from './schema.js';

/**
 * The config's JSON Schema, generated from the zod schema the loader validates with, so editors
 * (yaml-language-server) check a config as it is typed. Shipped as config/leadgate.schema.json;
 * `npm run schema` writes it and a test keeps the file in step.
 */
export function configJsonSchema(): Record<string, unknown> {
  return {
    title: 'leadgate config',
    description: 'leadgate gateway config (docs/reference/config.md). Checked fully by `leadgate check`.',
    ...toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any', target: 'draft-7' }),
  };
}

export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}
