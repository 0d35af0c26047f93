// Registers Oncely's search attributes (src/temporal/names.ts) on a namespace, adding only
// those it lacks: `oncely migrate` runs it, so an upgrade that adds one needs no manual
// operator command (an upload naming a missing attribute fails its start).
import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { searchAttributes } from './names';

const IndexedValueType = proto.temporal.api.enums.v1.IndexedValueType;
const types = { KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, INT: IndexedValueType.INDEXED_VALUE_TYPE_INT } as const;

/** Adds the missing ones; returns their names (empty when the namespace had them all). */
export async function ensureSearchAttributes(connection: Pick<Connection, 'operatorService'>, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.fromEntries(
    Object.values(searchAttributes)
      .filter((k) => !(k.name in (customAttributes ?? {})))
      .map((k) => [k.name, types[k.type as keyof typeof types]]),
  );
  if (Object.keys(missing).length === 0) return [];
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  } catch (err) {
    // Another migrate added them meanwhile.
    if (!/already exists|AlreadyExists/i.test(String(err))) throw err;
  }
  return Object.keys(missing);
}
