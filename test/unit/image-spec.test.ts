// Image transform specs: aliases, order, dpr and defaults normalise into one canonical string;
// f_auto follows Accept; every malformed option is refused with a reason naming it.
import { describe, expect, it } from 'vitest';
import { canonicalSpec, isOptionString, negotiateFormat, parseSpec, SpecError, specText } from '../../src/images/spec';

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
