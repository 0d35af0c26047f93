// Image transform specs: aliases, order, dpr and defaults normalise into one canonical string;
// f_auto follows Accept; every malformed option is refused with a reason naming it.
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { renderImage } from '../../src/images/render';
import {
  boxCost,
  canonicalSpec,
  isOptionString,
  negotiateFormat,
  outputSize,
  parseSpec,
  renderCost,
  SpecError,
  specText,
} from '../../src/images/spec';

const canon = (spec: string, source = 'image/jpeg', accept?: string) => canonicalSpec(parseSpec(spec), source, accept).text;

describe('image spec', () => {
  it('writes equal requests as one canonical string', () => {
    const forms = [
      'w_400,h_300,fit_cover,f_webp,q_80',
      'h_300,w_400,f_webp,fit_cover',
      'width_400,height_300,c_fill,format_webp,quality_80',
      'w_200,h_150,dpr_2,fit_crop,f_webp',
      'fit_cover,q_80,f_webp,h_300,w_400',
    ];
    expect(new Set(forms.map((f) => canon(f)))).toEqual(new Set(['w_400,h_300,fit_cover,f_webp,q_80']));
  });

  it('fills in the defaults: fit inside, the source family as format, the encoder quality (none for PNG)', () => {
    expect(canon('w_100')).toBe('w_100,fit_inside,f_jpeg,q_80');
    expect(canon('w_100', 'image/png')).toBe('w_100,fit_inside,f_png');
    expect(canon('w_100', 'image/gif')).toBe('w_100,fit_inside,f_png');
    expect(canon('h_64', 'image/tiff')).toBe('h_64,fit_inside,f_jpeg,q_80');
    expect(canon('w_100,f_avif')).toBe('w_100,fit_inside,f_avif,q_50');
    expect(canon('w_100,f_png,q_30')).toBe('w_100,fit_inside,f_png');
    expect(canon('w_100,f_jpg')).toBe('w_100,fit_inside,f_jpeg,q_80');
    expect(canon('w_33,dpr_1.5')).toBe('w_50,fit_inside,f_jpeg,q_80');
  });

  it('negotiates f_auto from Accept, and says so', () => {
    const cases: [string | undefined, string, string][] = [
      ['image/avif,image/webp,image/apng,*/*;q=0.8', 'image/jpeg', 'avif'],
      ['image/webp,*/*', 'image/jpeg', 'webp'],
      ['image/avif;q=0,image/webp', 'image/png', 'webp'],
      ['text/html,*/*;q=0.8', 'image/png', 'png'],
      [undefined, 'image/jpeg', 'jpeg'],
      ['IMAGE/WEBP', 'image/jpeg', 'webp'],
    ];
    for (const [accept, source, format] of cases) expect([accept, negotiateFormat(accept, source)]).toEqual([accept, format]);
    const auto = canonicalSpec(parseSpec('w_10,f_auto'), 'image/jpeg', 'image/webp');
    expect(auto).toMatchObject({ text: 'w_10,fit_inside,f_webp,q_80', negotiated: true });
    expect(canonicalSpec(parseSpec('w_10,f_webp'), 'image/jpeg', undefined).negotiated).toBe(false);
  });

  it('keeps a preset as written: f_auto and an absent format stay open', () => {
    expect(specText(parseSpec('f_auto,w_400,dpr_2'))).toBe('w_800,fit_inside,f_auto');
    expect(specText(parseSpec('h_10'))).toBe('h_10,fit_inside');
  });

  it('refuses every malformed option, naming it', () => {
    const bad: [string, RegExp][] = [
      ['', /not an option/],
      ['w_', /not an option/],
      ['x_10', /"x_10" is not an option/],
      ['w_10,w_20', /repeats/],
      ['w_0', /whole number/],
      ['w_-1', /not an option/],
      ['w_10.5', /whole number/],
      ['w_9000', /more than 8192/],
      ['w_5000,dpr_2', /at dpr 2 is more than 8192/],
      ['w_10,dpr_7', /dpr_7/],
      ['fit_cover', /give w_, h_ or both/],
      ['w_10,fit_zoom', /fit_zoom/],
      ['w_10,f_bmp', /f_bmp/],
      ['w_10,q_0', /q_0/],
      ['w_10,q_101', /q_101/],
      ['w_10,,h_10', /not an option/],
      ['W_10', /not an option/],
      [`w_10,${'q_1,'.repeat(60)}`, /at most 200/],
      // Words every object answers to are not options or values.
      ['w_10,constructor_1', /"constructor_1" is not an option/],
      ['w_10,fit_constructor', /fit_constructor/],
      ['w_10,f_constructor', /f_constructor/],
    ];
    for (const [spec, reason] of bad) {
      expect(() => parseSpec(spec), spec).toThrow(SpecError);
      expect(() => parseSpec(spec), spec).toThrow(reason);
    }
  });

  it('tells an option string from a preset name', () => {
    expect(isOptionString('w_400')).toBe(true);
    expect(isOptionString('thumb')).toBe(false);
    expect(isOptionString('hero-2x')).toBe(false);
    // A name with an underscore is still a name; a list, or a first word that is an option, is options.
    expect(isOptionString('thumb_small')).toBe(false);
    expect(isOptionString('constructor_1')).toBe(false);
    expect(isOptionString('width_400')).toBe(true);
    expect(isOptionString('c_fill')).toBe(true);
    expect(isOptionString('x_10,w_10')).toBe(true);
  });
});

describe('a render is never larger than its source, and its cost is known before any work', () => {
  const size = (spec: string, source: { width: number; height: number }) => {
    const out = outputSize(canonicalSpec(parseSpec(spec), 'image/png', undefined), source);
    return [out.width, out.height];
  };
  it.each([
    ['w_8192,h_8192,fit_contain', { width: 4, height: 4 }, [4, 4]],
    ['w_8192,h_4096,fit_contain', { width: 4, height: 4 }, [4, 2]],
    ['w_8192,h_8192,fit_cover', { width: 4, height: 3 }, [3, 3]],
    ['w_8192,h_8192,fit_fill', { width: 40, height: 30 }, [30, 30]],
    ['w_8192,h_8192,fit_inside', { width: 40, height: 30 }, [40, 30]],
    ['w_8192,fit_outside', { width: 40, height: 30 }, [40, 30]],
    ['w_8192,h_10,fit_outside', { width: 400, height: 300 }, [400, 300]],
    ['w_100,h_100,fit_outside', { width: 400, height: 300 }, [133, 100]],
    ['w_200,h_100,fit_contain', { width: 400, height: 300 }, [200, 100]],
    ['w_200,fit_cover', { width: 400, height: 300 }, [200, 150]],
    ['h_4000,dpr_2,fit_contain', { width: 4000, height: 3000 }, [4000, 3000]],
  ] as const)('%s of a %o source renders %o', (spec, source, expected) => {
    expect(size(spec, source)).toEqual(expected);
    expect(size(spec, source)[0]! * size(spec, source)[1]!).toBeLessThanOrEqual(source.width * source.height);
  });

  it('costs pixels times the format, and knows a box it fills whole before the source', () => {
    expect(renderCost(1000, 1000, 'jpeg')).toBe(1);
    expect(renderCost(1000, 1000, 'avif')).toBe(6);
    expect(boxCost(canonicalSpec(parseSpec('w_8192,h_8192,f_avif'), 'image/png', undefined))).toBeCloseTo(402.65, 1);
    expect(boxCost(canonicalSpec(parseSpec('w_8192,f_avif'), 'image/png', undefined))).toBeUndefined();
  });
});

describe('renderImage', () => {
  it('pads a 4×4 picture asked for 8192×8192 within the source: 4×4, not 8192×8192', async () => {
    const tiny = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#f00' } })
      .png()
      .toBuffer();
    const out = await renderImage(tiny, 'image/png', canonicalSpec(parseSpec('w_8192,h_8192,fit_contain,f_png'), 'image/png', undefined), {
      maxPixels: 1e8,
      maxCost: 1000,
    });
    expect([out.width, out.height]).toEqual([4, 4]);
  });

  it('refuses a variant whose cost is over the limit before encoding it', async () => {
    const picture = await sharp({ create: { width: 3000, height: 2000, channels: 3, background: '#0f0' } })
      .png()
      .toBuffer();
    const spec = canonicalSpec(parseSpec('w_3000,f_avif'), 'image/png', undefined);
    const started = Date.now();
    await expect(renderImage(picture, 'image/png', spec, { maxPixels: 1e8, maxCost: 30 })).rejects.toThrow(/36\.0 megapixels.*limit of 30/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const cheap = await renderImage(picture, 'image/png', canonicalSpec(parseSpec('w_300,f_avif'), 'image/png', undefined), {
      maxPixels: 1e8,
      maxCost: 30,
    });
    expect([cheap.width, cheap.height]).toEqual([300, 200]);
  });
});
