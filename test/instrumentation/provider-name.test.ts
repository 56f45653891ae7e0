import { describe, expect, it } from 'vitest';
import { providerName } from '../../instrumentation/providers/provider-name';

describe('providerName', () => {
  it.each([
    ['api.openai.com', 'openai', 'openai'],
    ['my-res.openai.azure.com', 'openai', 'azure.ai.openai'],
    ['api.anthropic.com', 'anthropic', 'anthropic'],
    ['api.deepseek.com', 'openai', 'deepseek'],
    ['api.groq.com', 'openai', 'groq'],
    ['api.mistral.ai', 'openai', 'mistral_ai'],
    ['api.x.ai', 'openai', 'x_ai'],
    ['api.perplexity.ai', 'openai', 'perplexity'],
    ['generativelanguage.googleapis.com', 'openai', 'gcp.gemini'],
    ['bedrock-runtime.us-east-1.amazonaws.com', 'anthropic', 'aws.bedrock'],
    ['API.OPENAI.COM', 'openai', 'openai'],
    ['127.0.0.1', 'openai', 'openai_compatible'],
    ['localhost', 'anthropic', 'anthropic_compatible'],
    ['s3.amazonaws.com', 'openai', 'openai_compatible'],
  ] as const)('%s (%s wire) → %s', (host, family, want) => {
    expect(providerName(host, family)).toBe(want);
  });

  it('an override names unknown hosts only', () => {
    expect(providerName('gateway.internal', 'openai', 'litellm')).toBe('litellm');
    expect(providerName('api.openai.com', 'openai', 'litellm')).toBe('openai');
  });
});
