// An object's address: the key the rows hold. It names the storage target the object lives
// in — `targets/{id}/{key}` for a tenant's registered target, a bare key for the instance's
// store (the default target) — so every read follows its row to the right store, and moving
// an object is rewriting its address.
const TARGETS = 'targets/';
const UUID_LENGTH = 36;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The address of `key` on a target (null: the default). */
export function addressOn(targetId: string | null | undefined, key: string): string {
  return targetId ? `${TARGETS}${targetId}/${key}` : key;
}

/** The target an address names (null: the default) and the key within it. */
export function parseAddress(address: string): { targetId: string | null; key: string } {
  if (!address.startsWith(TARGETS)) return { targetId: null, key: address };
  const targetId = address.slice(TARGETS.length, TARGETS.length + UUID_LENGTH);
  if (!UUID.test(targetId) || address[TARGETS.length + UUID_LENGTH] !== '/') return { targetId: null, key: address };
  return { targetId, key: address.slice(TARGETS.length + UUID_LENGTH + 1) };
}

/** The address of `key` on the same target as `beside` (renditions beside their original). */
export function addressBeside(beside: string, key: string): string {
  return addressOn(parseAddress(beside).targetId, key);
}

/** The address prefixes of the instance's store ('') and of each of these targets. */
export function storeRoots(targetIds: readonly string[]): string[] {
  return ['', ...targetIds.map((id) => addressOn(id, ''))];
}
