// What a file name may be (after percent-decoding): 1-255 characters, no control characters or slashes.
export const FILE_NAME_PATTERN = /^[^\x00-\x1f\x7f/\\]{1,255}$/;
