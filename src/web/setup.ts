// The upload pages' settings (/setup): whether this browser is signed in to the console (the
// pages mint their upload tokens through that session; no API key is entered or kept here)
// and the hosts the pages' tokens may import from by link.
import { consoleSession, IMPORT_HOSTS_STORAGE, TOKEN_STORAGE } from './upload-token';

const state = document.querySelector<HTMLParagraphElement>('#state')!;
void consoleSession().then((s) => {
  state.dataset.signedIn = s ? 'yes' : 'no';
  state.textContent = s
    ? 'Signed in to the console: the upload pages mint their upload tokens through this session.'
    : 'Not signed in: sign in to the console first.';
});
const hostsInput = document.querySelector<HTMLInputElement>('#import-hosts')!;
hostsInput.value = localStorage.getItem(IMPORT_HOSTS_STORAGE) ?? '';
hostsInput.addEventListener('change', () => {
  localStorage.setItem(IMPORT_HOSTS_STORAGE, hostsInput.value.trim());
  // The page's next token lists them.
  localStorage.removeItem(TOKEN_STORAGE);
});
