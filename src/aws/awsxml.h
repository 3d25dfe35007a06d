/* awsxml: the minimum of XML that lockfs reads: the text of the first element
 * with a given local name in an STS answer (AssumeRoleWithWebIdentity result
 * or ErrorResponse). Not a general parser: no DTDs, entities limited to the
 * five predefined ones and numeric references. Bounded, no allocation except
 * the returned copy. */
#ifndef LOCKFS_AWSXML_H
#define LOCKFS_AWSXML_H

#include <stddef.h>

/* Finds <name>text</name> (any namespace prefix; "<name/>" is empty text)
 * and returns a malloc'd, unescaped copy of text in *out (CDATA kept,
 * comments dropped). 0, -ENOENT, -EPROTO (malformed before or inside the
 * element, a DTD, a child element, a NUL byte), -ENOMEM. *out is NULL
 * unless 0 is returned. */
int awsxml_text(const char *xml, size_t len, const char *name, char **out);

#endif
