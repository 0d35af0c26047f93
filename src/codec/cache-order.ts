// Bounds for the codec's in-process caches, plain Maps kept in the order their entries were
// set: the oldest entry is always the first, so bounding one stops at the first entry kept.

/** Sets an entry at the end of a map's order, which is then the order of the entries' times. */
export function refresh<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
}

/** Drops a map's oldest entries while it holds more than `max` or (given `fresh`) they are stale. */
export function forgetOldest<V>(map: Map<string, V>, max: number, fresh: (entry: V) => boolean = () => true): void {
  for (const [k, v] of map) {
    if (fresh(v) && map.size <= max) return;
    map.delete(k);
  }
}
