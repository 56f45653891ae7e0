/** The package version (checked against package.json by a test). Feeds the tracer scope. */
export const VERSION = '0.1.0';
export const PACKAGE_NAME = 'faultline';
