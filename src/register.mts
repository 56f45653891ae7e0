// `node --import faultline/register app.mjs`: the ESM entry runs the CommonJS register (one implementation, and the
// runtime's global slot keeps it idempotent if both are loaded).
import './register.js';
