// Headless Debian Chromium driven by playwright-core, with the flags this machine needs
// (no sandbox as root; no background networking, which the closed network refuses).
import { chromium, type Browser, type Page } from 'playwright-core';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Signs `page` in to the console at `base` with an API key (the upload pages then mint their tokens through it). */
export async function signInToConsole(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/console/sign-in`);
  await page.fill('#secret', key);
  await page.click('button[type=submit]:has-text("Sign in")');
  await page.waitForURL(/\/console\/(uploads|operator)/);
}
