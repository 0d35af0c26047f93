// The one list of doors: a door for every mode, fingerprints that keep a key to its door, and
// each door's headers reaching CORS.
import { describe, expect, it } from 'vitest';
import { DOORS, doorHeaders } from '../../src/arrivals';
import { EXPOSED_HEADERS, REQUEST_HEADERS } from '../../src/api/app';
import { ARRIVAL_MODES, isAppended } from '../../src/modes';

describe('the doors', () => {
  it('list one door per arrival mode, in mount order', () => {
    expect(Object.keys(DOORS).sort()).toEqual(Object.keys(ARRIVAL_MODES).sort());
    expect(Object.keys(DOORS)).toEqual(['tus', 'rufh', 'direct', 'uppy', 'upload', 'form', 'import']);
  });

  it('record a different route in each door’s fingerprints', () => {
    const routes = Object.values(DOORS).map((d) => d.fingerprintRoute);
    expect(new Set(routes).size).toBe(routes.length);
  });

  it('have their headers allowed and exposed cross-origin, each once', () => {
    const { request, response } = doorHeaders();
    expect(request).toEqual(expect.arrayContaining(['Tus-Resumable', 'Upload-Offset', 'Upload-Complete', 'Upload-Draft-Interop-Version']));
    for (const h of request) expect(REQUEST_HEADERS).toContain(h);
    for (const h of response) expect(EXPOSED_HEADERS).toContain(h);
    expect(new Set(REQUEST_HEADERS.map((h) => h.toLowerCase())).size).toBe(REQUEST_HEADERS.length);
    expect(new Set(EXPOSED_HEADERS.map((h) => h.toLowerCase())).size).toBe(EXPOSED_HEADERS.length);
  });

  it('say which sessions are appended through the API and which are signed', () => {
    expect(isAppended('tus')).toBe(true);
    expect(isAppended('rufh')).toBe(true);
    expect(isAppended('direct')).toBe(false);
    expect(isAppended('uppy')).toBe(false);
  });
});
