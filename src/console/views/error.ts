// A problem the console cannot show on the page it came from: its status and the API's words.
import { html } from 'hono/html';
import type { ConsoleCaller } from '../sessions';
import { page, type Fragment } from './kit';

const TITLES: Record<number, string> = { 400: 'Not accepted', 403: 'Not allowed', 404: 'Not found', 409: 'Not now', 422: 'Not accepted' };

export function errorPage(status: number, message: string, caller: ConsoleCaller | undefined): Fragment {
  return page(
    { title: TITLES[status] ?? (status >= 500 ? 'Something is unavailable' : 'Refused'), caller, error: message },
    html`<p><a href="/console">Back to the console</a></p>`,
  );
}
