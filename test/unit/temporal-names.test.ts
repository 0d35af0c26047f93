// The homes of Temporal names hold true together: the house's (src/temporal/names.ts) and each
// wing's contract (src/<wing>/contract.ts). Every workflow type they name is a workflow the
// bundle exports, every workflow ID format has a prefix of its own, and every patch ID is
// spelled once.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as workflows from '../../workflows';
import * as house from '../../src/temporal/names';

type Names = Record<string, unknown>;

/** Each wing's contract module, by wing. */
async function wingContracts(): Promise<Record<string, Names>> {
  const src = path.resolve('src');
  const wings = readdirSync(src).filter((w) => existsSync(path.join(src, w, 'contract.ts')));
  return Object.fromEntries(await Promise.all(wings.map(async (w) => [w, (await import(path.join(src, w, 'contract.ts'))) as Names])));
}

/** Every object exported under a name ending in `suffix` (house: the exact name), merged. */
function gather(modules: Names[], suffix: string): Record<string, unknown> {
  const all: Record<string, unknown> = {};
  for (const m of modules)
    for (const [name, value] of Object.entries(m))
      if (name === suffix || name.endsWith(suffix.charAt(0).toUpperCase() + suffix.slice(1))) Object.assign(all, value);
  return all;
}

describe("Temporal names, the house's and the wings'", () => {
  it('finds the wings that declare a contract', async () => {
    expect(Object.keys(await wingContracts())).toContain('images');
  });

  it('names only workflows the bundle exports', async () => {
    const types = gather([house, ...Object.values(await wingContracts())], 'workflowTypes');
    expect(Object.values(types)).toContain('imageVariantWorkflow');
    for (const type of Object.values(types))
      expect(typeof (workflows as Record<string, unknown>)[type as string], String(type)).toBe('function');
  });

  it('exports each workflow under its own name, so a start by reference names the type the bundle registers', () => {
    const exported = Object.entries(workflows as Record<string, unknown>).filter(([, v]) => typeof v === 'function');
    expect(exported.map(([name]) => name)).toContain('uploadWorkflow');
    for (const [name, fn] of exported) expect((fn as () => unknown).name, name).toBe(name);
  });

  it('keeps the ID formats running workflows were started under, one prefix each', async () => {
    expect(house.workflowIds.downstream('u1')).toBe('downstream/u1');
    expect(house.workflowIds.deletion('u1')).toBe('delete/u1');
    const ids = gather([house, ...Object.values(await wingContracts())], 'workflowIds') as Record<string, (...a: string[]) => string>;
    expect(ids.imageVariant!('u1', 'w_10')).toBe('image/u1/w_10');
    const prefixes = Object.values(ids).map((f) => f('x', 'y', 'z').split('/')[0]);
    expect(new Set(prefixes).size).toBe(prefixes.length);
  });

  it('spells each patch ID once', async () => {
    const modules = [house, ...Object.values(await wingContracts())];
    const ids = modules.flatMap((m) =>
      Object.entries(m)
        .filter(([name]) => name === 'patches' || name.endsWith('Patches'))
        .flatMap(([, v]) => Object.values(v as Record<string, string>)),
    );
    expect(ids.length).toBeGreaterThan(5);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
