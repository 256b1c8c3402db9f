// Package schemacompat reads what CRD schemas say of the objects they
// describe: whether a round trip between two versions keeps every field
// (SchemaProof), which fields two objects differ in (DiffFields), what a
// change between two schemas does to the objects and clients of a version
// (SchemaChanges), the smallest object a version accepts (MinimalObject),
// and one that holds every field a version declares (EveryFieldObject). It knows the API types only: the stage model is
// package lifecycle's, and the findings made from these answers package
// check's.
package schemacompat
