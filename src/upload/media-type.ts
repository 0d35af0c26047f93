// What a media type's essence looks like (RFC 9110 type/subtype, lower case, parameters dropped).
export const MEDIA_TYPE_PATTERN = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
