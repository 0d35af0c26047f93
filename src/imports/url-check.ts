// The import URL as the fetch's first hop will check it, before anything is stored: http(s),
// no credentials, a host that resolves only to addresses imports may reach.
import { assertDeliverableUrl, DisallowedUrlError, parseOutgoingUrl } from '../downstream/url-guard';
import { problem } from '../errors';

/** 400 import_url_invalid unless `url` passes the one URL guard (`what` names it in the answer). */
export async function assertImportUrlAllowed(url: string, allowPrivateNetworks: boolean, what = 'The import URL'): Promise<void> {
  try {
    await assertDeliverableUrl(url, { allowPrivateNetworks });
  } catch (err) {
    if (err instanceof DisallowedUrlError) throw problem('import_url_invalid', `${what} is not allowed: ${err.message}.`);
    throw err;
  }
}

/**
 * Each URL checked as the door checks one (scheme, no credentials: a refusal names the item),
 * then each distinct origin once, a few at a time (a batch of 10,000 items names few hosts).
 */
export async function assertImportUrlsAllowed(urls: string[], allowPrivateNetworks: boolean): Promise<void> {
  urls.forEach((url, i) => {
    try {
      parseOutgoingUrl(url);
    } catch (err) {
      if (err instanceof DisallowedUrlError) throw problem('import_url_invalid', `The URL of item ${i} is not allowed: ${err.message}.`);
      throw err;
    }
  });
  const origins = [...new Set(urls.map((u) => new URL(u).origin))];
  for (let i = 0; i < origins.length; i += 16) {
    await Promise.all(origins.slice(i, i + 16).map((o) => assertImportUrlAllowed(`${o}/`, allowPrivateNetworks, `The origin ${o}`)));
  }
}
