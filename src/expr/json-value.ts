/** JSON values: what expressions compute with and what outputs hold. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
