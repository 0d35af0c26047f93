// holdingEventLoop keeps a ref'd handle for exactly as long as its work runs.
import { describe, expect, it } from 'vitest';
import { holdingEventLoop } from '../../src/event-loop-hold';

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('holdingEventLoop', () => {
  it('holds a timer while the work runs and releases it after, also when the work fails', async () => {
    const before = timeouts();
    let during = 0;
    expect(await holdingEventLoop(async () => ((during = timeouts()), 'done'))).toBe('done');
    expect(during).toBe(before + 1);
    expect(timeouts()).toBe(before);
    await expect(holdingEventLoop(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(timeouts()).toBe(before);
  });
});
