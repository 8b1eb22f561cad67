import { COMMANDS, overview } from './commands.js';

/** docs/reference/cli.md: the same help text the binary prints, so the two cannot drift. */
export function cliMarkdown(): string {
  const sections = Object.entries(COMMANDS).map(([name, c]) => `## ${name}\n\n\`\`\`\n${c.usage}\`\`\`\n`);
  return `# Command line

\`leadgate\` (\`npx leadgate\` in a checkout, \`node /app/dist/src/main.js\` in the image). Help and
the version go to stdout with exit 0; usage errors go to stderr with exit 2; \`check\` exits 1
when the config has problems. No command takes a credential on the command line, and none
repeats back an argument it did not understand. Generated from the binary's own help text by
\`npm run schema\`; a test keeps it in step.

On a Node line outside \`engines\` (\`>=22.19\`; Node 20, say) every command still runs and first
prints one line on stderr: \`leadgate: warning: Node 20.20.2 is not supported …\`.

\`\`\`
${overview()}\`\`\`

${sections.join('\n')}`;
}
