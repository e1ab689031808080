/** Where a dialect's client put each image it translated: errors about the image name that place, not the chat body's. */
const origins = new WeakMap<object, string>();

/**
 * A chat-completions image_url part for an image a dialect translated (Anthropic's image blocks, the
 * Responses API's input_image parts), remembering `at`, the image's place in the client's own body.
 */
export function chatImagePart(url: string, at: string, detail?: string): Record<string, unknown> {
  const image: Record<string, unknown> = { url, ...(detail === undefined ? {} : { detail }) };
  origins.set(image, at);
  return { type: 'image_url', image_url: image };
}

/** The client's own place of a translated image (chatImagePart), if it came from a dialect. */
export const originOf = (image: object): string | undefined => origins.get(image);
