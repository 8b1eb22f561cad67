import { writeFileSync } from 'node:fs';
import { errorsMarkdown } from '../src/auth/error-docs.js';
import { cliMarkdown } from '../src/cli/docs.js';
import { configJsonSchemaText } from '../src/config/json-schema.js';
import { configReferenceMarkdown } from '../src/config/reference.js';

/** `npm run schema`: writes config/leadgate.schema.json, docs/config.md, docs/errors.md and docs/cli.md from the loader's schema. */
for (const [file, text] of [
  ['../../config/leadgate.schema.json', configJsonSchemaText()],
  ['../../docs/config.md', configReferenceMarkdown()],
  ['../../docs/errors.md', errorsMarkdown()],
  ['../../docs/cli.md', cliMarkdown()],
] as const) {
  const target = new URL(file, import.meta.url);
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target.pathname}\n`);
}
