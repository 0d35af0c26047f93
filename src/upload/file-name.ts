// What a file name may be (after percent-decoding): 1-255 characters, no control characters
// (C0, DEL, C1), no slashes, and no bidirectional embedding, override or isolate (U+202A–E,
// U+2066–9), which make "photo\u202Egpj.exe" display as "photoexe.jpg" wherever it is shown.
export const FILE_NAME_PATTERN = /^[^\x00-\x1f\x7f-\x9f/\\\u202a-\u202e\u2066-\u2069]{1,255}$/;
