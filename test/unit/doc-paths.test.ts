// The docs name files that exist: every repository path a page spells in backticks and every
// relative link resolves, so a file moved or renamed cannot leave a page pointing at nothing.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOTS = /^(src|workflows|activities|test|bench|scripts|docs|tools)\//;
/** Files ARCHITECTURE's worked example invents on purpose (a wing that does not exist). */
const IMAGINED = /(^|\/)collections\//;

function pages(): string[] {
  const docs = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? docs(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
    );
  return ['README.md', 'test/README.md', 'bench/README.md', ...docs('docs')];
}

/** `a/{b,c}.ts` as `a/b.ts` and `a/c.ts`. */
function expand(path: string): string[] {
  const m = /\{([^{}]+)\}/.exec(path);
  return m ? m[1]!.split(',').flatMap((alt) => expand(path.replace(m[0], alt))) : [path];
}

/** The repository paths a page spells in backticks, braces expanded (globs and placeholders left out). */
function spelledPaths(text: string): string[] {
  return [...text.matchAll(/`([^`\s]+)`/g)]
    .map((m) => m[1]!.replace(/[.:]$/, ''))
    .filter((p) => ROOTS.test(p) && !/[*<>]|\.\.\./.test(p) && !IMAGINED.test(p))
    .flatMap(expand);
}

/** The relative link targets of a page, without their fragment. */
function linkTargets(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!.split('#')[0]!).filter((l) => l && !/^[a-z]+:/.test(l));
}

describe('the docs', () => {
  it('finds paths and links the way a page writes them', () => {
    const text =
      'see `src/modes.ts`, `src/*/contract.ts`, `workflows/{a,b}.ts`, `npm test` and [ops](docs/OPERATIONS.md#x) or [web](https://x.y)';
    expect(spelledPaths(text)).toEqual(['src/modes.ts', 'workflows/a.ts', 'workflows/b.ts']);
    expect(linkTargets(text)).toEqual(['docs/OPERATIONS.md']);
  });

  it('name only files and folders that exist', () => {
    const missing = pages().flatMap((page) => {
      const text = readFileSync(page, 'utf8');
      return [
        ...spelledPaths(text).filter((p) => !existsSync(p.replace(/\/$/, ''))),
        ...linkTargets(text).filter((l) => !existsSync(join(dirname(page), l))),
      ].map((p) => `${page}: ${p}`);
    });
    expect(pages().length).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });
});
