/** The product categories and their field schemas (src/domain/categories); no tenant needed. */
import { ApiError } from "@dpp/contract";
import { findCategory, listCategories as allCategories, type CategoryDefinition } from "../domain/categories";

export function listCategories(): CategoryDefinition[] {
  return allCategories();
}

/** A category with its JSON Schema, or resource_not_found. */
export function getCategory(category: string): CategoryDefinition {
  const c = findCategory(category);
  if (!c)
    throw new ApiError("resource_not_found", `No category ${category}; GET /v1/categories lists them.`, {
      category,
    });
  return c;
}
