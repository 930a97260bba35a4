// core-js-pure ships no types for these entry points; the runtime uses them as
// the standard globals they implement.
declare module 'core-js-pure/stable/atob.js' {
  const atob: (data: string) => string;
  export default atob;
}
declare module 'core-js-pure/stable/btoa.js' {
  const btoa: (data: string) => string;
  export default btoa;
}
declare module 'core-js-pure/stable/structured-clone.js' {
  const structuredClone: <T>(value: T) => T;
  export default structuredClone;
}
declare module 'core-js-pure/stable/url/index.js' {
  const URL: unknown;
  export default URL;
}
declare module 'core-js-pure/stable/url-search-params/index.js' {
  const URLSearchParams: unknown;
  export default URLSearchParams;
}
